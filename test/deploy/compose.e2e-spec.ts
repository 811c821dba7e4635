import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { accessSync, constants, copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { freePort } from '../support/ports';
import { waitFor } from '../support/wait';

const execFileAsync = promisify(execFile);

/**
 * compose.yaml as docs/deployment.md#compose runs it: podman-compose brings up Gatehouse, PostgreSQL and Redis on the
 * file's own bridge network (service names resolved by aardvark-dns), from images built from Debian's packages and
 * Node's npm package (deploy/image/build.sh, build-services.sh). A copy of the file runs in a folder of its own, with
 * the .env the page describes, so that a developer's .env beside the real one changes nothing. Proves: the images
 * start from the file's variables, PostgreSQL made its role, password and database and answers only with the password,
 * the documented bootstrap works through `exec`, a key made then still exchanges after Gatehouse restarts (it is in
 * PostgreSQL), and `down -v` leaves nothing. Does not prove: docker compose (its `depends_on` conditions and health
 * checks, which podman-compose 1.0.3 does not honour), the registry images (postgres:17, redis:7), or the ports published
 * on another address than loopback.
 *
 * Images: GATEHOUSE_IMAGE, POSTGRES_IMAGE and REDIS_IMAGE name built ones; without them the suite builds the default
 * tags itself (minutes when nothing is cached). CI runs it in .ci/run's image step, which names them, and skips it in
 * its whole-suite runs; elsewhere it runs where podman, podman-compose and mmdebstrap are installed.
 */
const ROOT = resolve(__dirname, '..', '..');
const IMAGE_VARIABLES = ['GATEHOUSE_IMAGE', 'POSTGRES_IMAGE', 'REDIS_IMAGE'];
const named = IMAGE_VARIABLES.every((variable) => process.env[variable] !== undefined);
const onPath = (tool: string): boolean =>
  (process.env.PATH ?? '').split(delimiter).some((dir) => {
    try {
      accessSync(join(dir, tool), constants.X_OK);
      return true;
    } catch {
      return false;
    }
  });
const missing = ['podman', 'podman-compose', ...(named ? [] : ['mmdebstrap'])].filter((tool) => !onPath(tool));
const skipped =
  process.env.CI !== undefined
    ? named
      ? undefined
      : `.ci/run runs it in its image step, with ${IMAGE_VARIABLES.join(', ')}`
    : missing.length > 0
      ? `needs ${missing.join(', ')} (apt-get install podman podman-compose mmdebstrap)`
      : undefined;
const describeCompose = skipped === undefined ? describe : describe.skip;
if (skipped !== undefined) console.log(`compose suite skipped: ${skipped}`);

const BUILD_TIMEOUT_MS = 20 * 60_000;
const images = {
  GATEHOUSE_IMAGE: process.env.GATEHOUSE_IMAGE ?? 'localhost/gatehouse:dev',
  POSTGRES_IMAGE: process.env.POSTGRES_IMAGE ?? 'localhost/gatehouse-postgres:dev',
  REDIS_IMAGE: process.env.REDIS_IMAGE ?? 'localhost/gatehouse-redis:dev',
};
const project = `gatehouse-compose-${randomBytes(4).toString('hex')}`;
const label = `io.podman.compose.project=${project}`;
let dir: string;
let env: NodeJS.ProcessEnv;
let url: string;

function run(file: string, args: string[], timeout = 120_000): Promise<{ stdout: string; stderr: string }> {
  return execFileAsync(file, args, { env, cwd: dir ?? ROOT, timeout, maxBuffer: 16 * 1024 * 1024 });
}

/** podman-compose on the copy. Its output is never printed: version 1.0.3 echoes each podman command, .env included. */
function compose(...args: string[]): Promise<{ stdout: string; stderr: string }> {
  return run('podman-compose', ['--project-name', project, '--file', join(dir, 'compose.yaml'), ...args]);
}

const container = (service: string): string => `${project}_${service}_1`;

async function status(path: string): Promise<number | undefined> {
  return (await fetch(`${url}${path}`).catch(() => undefined))?.status;
}

/** What each container logged, for a failure's message (Gatehouse and PostgreSQL log no secret). */
async function logs(): Promise<string> {
  const parts = await Promise.all(
    ['gatehouse', 'postgres', 'redis'].map(async (service) => {
      const { stdout, stderr } = await run('podman', ['logs', '--tail', '40', container(service)]).catch(() => ({
        stdout: '',
        stderr: '(no logs)',
      }));
      return `--- ${service}\n${stdout}${stderr}`;
    }),
  );
  return parts.join('\n');
}

async function ready(what: string): Promise<void> {
  await waitFor(what, async () => (await status('/readyz')) === 200, { timeoutMs: 120_000, everyMs: 250 }).catch(
    async (error: Error) => {
      throw new Error(`${error.message}\n${await logs()}`);
    },
  );
}

/** The volumes mounted in the project's containers (named, and anonymous ones should an image's VOLUME be left bare). */
async function mountedVolumes(): Promise<string[]> {
  const { stdout } = await run('podman', ['ps', '--all', '--quiet', '--filter', `label=${label}`]);
  const containers = stdout.split('\n').filter((line) => line !== '');
  if (containers.length === 0) return [];
  const mounts = await run('podman', [
    'inspect',
    '--format',
    '{{range .Mounts}}{{if eq .Type "volume"}}{{.Name}} {{end}}{{end}}',
    ...containers,
  ]);
  return mounts.stdout.split(/\s+/).filter((name) => name !== '');
}

/** Whatever the test left, found by the project's label and the containers' mounts: containers, volumes, network. */
async function removeEverything(): Promise<void> {
  const volumes = await mountedVolumes().catch((): string[] => []);
  const { stdout } = await run('podman', ['ps', '--all', '--quiet', '--filter', `label=${label}`]).catch(() => ({
    stdout: '',
  }));
  const containers = stdout.split('\n').filter((line) => line !== '');
  if (containers.length > 0)
    await run('podman', ['rm', '--force', '--time', '0', ...containers]).catch(() => undefined);
  const labelled = await run('podman', ['volume', 'ls', '--quiet', '--filter', `label=${label}`]).catch(() => ({
    stdout: '',
  }));
  volumes.push(...labelled.stdout.split('\n').filter((line) => line !== ''));
  if (volumes.length > 0) await run('podman', ['volume', 'rm', '--force', ...new Set(volumes)]).catch(() => undefined);
  await run('podman', ['network', 'rm', '--force', `${project}_default`]).catch(() => undefined);
}

/** `podman run` works as podman is set up, or else as .ci/run sets it up here: runc, ulimits within the hard limits. */
async function containersRun(): Promise<void> {
  const probe = (): Promise<unknown> =>
    run('podman', [
      'run',
      '--rm',
      '--network',
      'none',
      '--entrypoint',
      '/usr/lib/postgresql/15/bin/postgres',
      images.POSTGRES_IMAGE,
      '--version',
    ]);
  try {
    await probe();
  } catch (error) {
    if (env.CONTAINERS_CONF !== undefined) throw error;
    const file = join(dir, 'containers.conf');
    const { stdout } = await execFileAsync('sh', ['-c', 'ulimit -Hn']);
    const nofile = stdout.trim();
    writeFileSync(
      file,
      `[containers]\ndefault_ulimits = ["nofile=${nofile}:${nofile}", "nproc=1024:1024"]\n[engine]\nruntime = "runc"\n`,
    );
    env = { ...env, CONTAINERS_CONF: file };
    await probe();
  }
}

describeCompose('compose.yaml: Gatehouse, PostgreSQL and Redis under podman-compose', () => {
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-compose-'));
    env = { ...process.env };
    if (process.env.GATEHOUSE_IMAGE === undefined) {
      await run('bash', [join(ROOT, 'deploy/image/build.sh'), images.GATEHOUSE_IMAGE], BUILD_TIMEOUT_MS);
    }
    if (process.env.POSTGRES_IMAGE === undefined || process.env.REDIS_IMAGE === undefined) {
      await run(
        'bash',
        [join(ROOT, 'deploy/image/build-services.sh'), images.POSTGRES_IMAGE, images.REDIS_IMAGE],
        BUILD_TIMEOUT_MS,
      );
    }
    await containersRun();
    const [port, metricsPort] = [await freePort(), await freePort()];
    url = `http://127.0.0.1:${port}`;
    copyFileSync(join(ROOT, 'compose.yaml'), join(dir, 'compose.yaml'));
    // The .env of docs/deployment.md#compose: the three secrets, and here the images and ports of this run.
    const pem = generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey.export({ type: 'pkcs8', format: 'pem' });
    const dotenv = {
      API_KEY_PEPPER: randomBytes(32).toString('base64'),
      INTEGRATIONS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
      JWT_PRIVATE_KEY: `"${pem.toString().trim()}"`,
      ...images,
      GATEHOUSE_PORT: String(port),
      GATEHOUSE_METRICS_PORT: String(metricsPort),
    };
    writeFileSync(
      join(dir, '.env'),
      Object.entries(dotenv)
        .map(([key, value]) => `${key}=${value}\n`)
        .join(''),
    );
    await compose('up', '--detach');
    await ready('Gatehouse is ready after `podman-compose up`');
  }, BUILD_TIMEOUT_MS + 180_000);

  afterAll(async () => {
    if (dir === undefined) return;
    await removeEverything();
    rmSync(dir, { recursive: true, force: true });
  }, 120_000);

  it('runs each service as its own non-root user; PostgreSQL answers its health check and only with the password', async () => {
    for (const [service, user] of [
      ['gatehouse', 'gatehouse'],
      ['postgres', 'postgres'],
      ['redis', 'redis'],
    ]) {
      const { stdout } = await run('podman', ['top', container(service), 'user']);
      expect({ service, users: [...new Set(stdout.trim().split('\n').slice(1))] }).toEqual({ service, users: [user] });
    }
    // compose.yaml's pg_isready health check, as podman runs it.
    await expect(run('podman', ['healthcheck', 'run', container('postgres')])).resolves.toBeDefined();

    const psql = (password: string): Promise<{ stdout: string }> =>
      run('podman', [
        'exec',
        '--env',
        `PGPASSWORD=${password}`,
        container('postgres'),
        'psql',
        '--host=127.0.0.1',
        '--username=gatehouse',
        '--dbname=gatehouse',
        '--no-align',
        '--tuples-only',
        '--command=SELECT current_user, rolsuper FROM pg_roles WHERE rolname = current_user',
      ]);
    await expect(psql('gatehouse')).resolves.toMatchObject({ stdout: 'gatehouse|t\n' });
    await expect(psql('wrong')).rejects.toMatchObject({
      stderr: expect.stringContaining('password authentication failed for user "gatehouse"'),
    });
  }, 60_000);

  it('bootstrap through exec, a key, a token; after Gatehouse restarts, the same key still exchanges', async () => {
    // The documented path: the admin CLI inside the gatehouse service, with its environment.
    const { stdout } = await compose(
      'exec',
      '-T',
      'gatehouse',
      'node',
      'dist/cli.js',
      'bootstrap',
      '--org',
      'acme',
      '--email',
      'admin@acme.test',
    );
    // One JSON line; podman-compose 1.0.3 prints the podman command before it and its exit code after.
    const line = stdout.split('\n').find((text) => text.startsWith('{'));
    const boot = JSON.parse(line ?? stdout) as { session_token: string; role: string };
    expect(boot.role).toBe('admin');

    const created = await fetch(`${url}/v1/user-api-keys`, {
      method: 'POST',
      headers: { Authorization: `Bearer ${boot.session_token}`, 'Content-Type': 'application/json' },
      body: JSON.stringify({ label: 'compose' }),
    });
    expect(created.status).toBe(201);
    const { opaque_key: key } = (await created.json()) as { opaque_key: string };
    const exchange = (): Promise<Response> =>
      fetch(`${url}/v1/token`, { method: 'POST', headers: { Authorization: `ApiKey ${key}` } });
    const first = await exchange();
    expect(first.status).toBe(200);
    const { access_token: token } = (await first.json()) as { access_token: string };
    const listed = await fetch(`${url}/v1/user-api-keys`, { headers: { Authorization: `Bearer ${token}` } });
    expect(((await listed.json()) as { api_keys: Array<{ label: string }> }).api_keys).toEqual([
      expect.objectContaining({ label: 'compose' }),
    ]);
    // A refused exchange is counted in Redis (the failure limit of POST /v1/token): Gatehouse uses the redis service.
    expect((await fetch(`${url}/v1/token`, { method: 'POST', headers: { Authorization: 'ApiKey nope' } })).status).toBe(
      401,
    );
    const keys = await run('podman', ['exec', container('redis'), 'redis-cli', '--scan', '--pattern', 'gatehouse:*']);
    expect(keys.stdout.trim()).not.toBe('');

    const startedAt = async (): Promise<string> =>
      (await run('podman', ['inspect', '--format', '{{.State.StartedAt}}', container('gatehouse')])).stdout.trim();
    const before = await startedAt();
    await compose('restart', 'gatehouse');
    expect(await startedAt()).not.toBe(before);
    await ready('Gatehouse is ready again after `podman-compose restart gatehouse`');

    const again = await exchange();
    expect(again.status).toBe(200);
    // The key is a row of PostgreSQL's, not of a file in the Gatehouse container.
    const { stdout: rows } = await run('podman', [
      'exec',
      container('postgres'),
      'psql',
      '--username=gatehouse',
      '--dbname=gatehouse',
      '--no-align',
      '--tuples-only',
      '--command=SELECT label FROM api_keys',
    ]);
    expect(rows.trim().split('\n')).toEqual(['compose']);
  }, 180_000);

  it('`down -v`, then the network as docs/deployment.md#compose says, leave nothing', async () => {
    const volumes = await mountedVolumes();
    // The three named volumes of the file, and no anonymous one.
    expect(volumes.sort()).toEqual(['gatehouse', 'postgres', 'redis'].map((name) => `${project}_${name}`));
    await compose('down', '--volumes');
    // podman-compose 1.0.3 leaves the network it made (docker compose removes it).
    await run('podman', ['network', 'rm', `${project}_default`]);
    const { stdout } = await run('podman', ['ps', '--all', '--quiet', '--filter', `label=${label}`]);
    expect(stdout.trim()).toBe('');
    for (const volume of volumes) {
      await expect(run('podman', ['volume', 'exists', volume])).rejects.toMatchObject({ code: 1 });
    }
    await expect(run('podman', ['network', 'exists', `${project}_default`])).rejects.toMatchObject({ code: 1 });
    expect(await status('/healthz')).toBeUndefined();
  }, 120_000);
});
