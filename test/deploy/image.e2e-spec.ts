import { execFile } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { promisify } from 'node:util';
import { freePort } from '../support/ports';
import { createTestDatabase, DATABASE_KIND, TestDatabase } from '../support/test-app';
import { waitFor } from '../support/wait';

const run = promisify(execFile);

/**
 * The container image (docs/deployment.md#image), as built by deploy/image/build.sh: started by podman on SQLite with a
 * volume, and on PostgreSQL and Redis from the environment, then called. Needs GATEHOUSE_IMAGE (the tag built) and a
 * podman that runs containers; .ci/run sets both where this machine can (docs/deployment.md#testing-the-image).
 * Host networking: the containers reach the PostgreSQL and Redis on loopback, and nothing leaves the machine.
 */
const IMAGE = process.env.GATEHOUSE_IMAGE;
const describeImage = IMAGE === undefined ? describe.skip : describe;
if (IMAGE === undefined) {
  console.log('image suite skipped: needs GATEHOUSE_IMAGE (deploy/image/build.sh) and podman able to run containers');
}

const secrets = {
  API_KEY_PEPPER: randomBytes(32).toString('base64'),
  INTEGRATIONS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
  JWT_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString(),
  PUBLIC_BASE_URL: 'https://gatehouse.example',
};

interface Container {
  name: string;
  url: string;
  metricsUrl: string;
}

async function start(env: Record<string, string>, volume?: string): Promise<Container> {
  const name = `gatehouse-test-${randomBytes(4).toString('hex')}`;
  const [port, metricsPort] = [await freePort(), await freePort()];
  const variables = { ...secrets, PORT: String(port), METRICS_PORT: String(metricsPort), ...env };
  await run('podman', [
    'run',
    '--detach',
    '--name',
    name,
    '--network',
    'host',
    ...(volume !== undefined ? ['--volume', `${volume}:/data`] : []),
    ...Object.entries(variables).flatMap(([key, value]) => ['--env', `${key}=${value}`]),
    IMAGE!,
  ]);
  const container = { name, url: `http://127.0.0.1:${port}`, metricsUrl: `http://127.0.0.1:${metricsPort}` };
  await waitFor(
    'the container is ready',
    async () => (await fetch(`${container.url}/readyz`).catch(() => undefined))?.status === 200,
    { timeoutMs: 60_000, everyMs: 200 },
  ).catch(async (error: Error) => {
    const { stdout, stderr } = await run('podman', ['logs', name]).catch(() => ({ stdout: '', stderr: '' }));
    throw new Error(`${error.message}\n${stdout}${stderr}`);
  });
  return container;
}

/** SIGTERM, as a kubelet sends it; the exit code the process gave. */
async function stop(container: Container): Promise<number> {
  await run('podman', ['stop', '--time', '20', container.name]);
  const { stdout } = await run('podman', ['inspect', container.name, '--format', '{{.State.ExitCode}}']);
  // --volumes: the anonymous volume of the image's /data when the test mounts none (the PostgreSQL case).
  await run('podman', ['rm', '--force', '--volumes', container.name]);
  return Number(stdout.trim());
}

describeImage('the container image', () => {
  it('runs as gatehouse (10001), not root, with nothing but Node to run', async () => {
    const { stdout } = await run('podman', [
      'run',
      '--rm',
      '--network',
      'host',
      '--entrypoint',
      '/usr/local/bin/node',
      IMAGE!,
      '-e',
      "const fs = require('fs'); console.log(JSON.stringify({ uid: process.getuid(), user: require('os').userInfo().username, version: process.version, shell: fs.existsSync('/bin/sh') }))",
    ]);
    expect(JSON.parse(stdout)).toEqual({
      uid: 10001,
      user: 'gatehouse',
      version: expect.stringMatching(/^v24\./),
      shell: false,
    });
  }, 60_000);

  it('on SQLite in a volume: ready on both ports, keeps its data across a restart, stops cleanly on SIGTERM', async () => {
    const volume = `gatehouse-test-${randomBytes(4).toString('hex')}`;
    try {
      const first = await start({}, volume);
      const ready = await fetch(`${first.url}/readyz`);
      expect(await ready.json()).toMatchObject({ status: 'ok', info: { migrations: { status: 'up' } } });
      expect((await fetch(`${first.metricsUrl}/readyz`)).status).toBe(200);
      expect((await fetch(`${first.metricsUrl}/healthz`)).status).toBe(200);
      const jwks = (await (await fetch(`${first.url}/.well-known/jwks.json`)).json()) as { keys: unknown[] };
      expect(jwks.keys).toHaveLength(1);
      expect(await stop(first)).toBe(0);

      const { stdout } = await run('podman', [
        'run',
        '--rm',
        '--network',
        'host',
        '--volume',
        `${volume}:/data`,
        '--entrypoint',
        '/usr/local/bin/node',
        IMAGE!,
        '-e',
        "console.log(require('fs').readdirSync('/data').join(','))",
      ]);
      expect(stdout.trim().split(',')).toContain('gatehouse.sqlite');
      const again = await start({}, volume);
      expect((await fetch(`${again.url}/readyz`)).status).toBe(200);
      expect(await stop(again)).toBe(0);
    } finally {
      await run('podman', ['volume', 'rm', '--force', volume]).catch(() => undefined);
    }
  }, 180_000);

  const onPostgres = DATABASE_KIND === 'postgres' && process.env.REDIS_URL_FOR_TESTS !== undefined ? it : it.skip;
  onPostgres(
    'on PostgreSQL and Redis from the environment: migrates, is ready, answers',
    async () => {
      const database: TestDatabase = createTestDatabase();
      try {
        const container = await start({
          DATABASE_URL: database.env.DATABASE_URL!,
          ...(database.env.DATABASE_SCHEMA !== undefined ? { DATABASE_SCHEMA: database.env.DATABASE_SCHEMA } : {}),
          REDIS_URL: process.env.REDIS_URL_FOR_TESTS!,
          REDIS_KEY_PREFIX: `image-${randomBytes(4).toString('hex')}:`,
        });
        const ready = await fetch(`${container.url}/readyz`);
        expect(await ready.json()).toMatchObject({ status: 'ok', info: { database: { status: 'up' } } });
        const refused = await fetch(`${container.url}/v1/token`, {
          method: 'POST',
          headers: { Authorization: 'ApiKey nope' },
        });
        expect(refused.status).toBe(401);
        expect(await stop(container)).toBe(0);
      } finally {
        await database.drop();
      }
    },
    180_000,
  );
});
