/**
 * `npm run bench:revocation`: how long a revocation takes to reach a resource server that uses the verifier
 * (verifier/), against the built server: SQLite by default (one instance), or two instances on PostgreSQL when
 * DATABASE_URL is set (the key is revoked at A, the verifier follows B). BENCH_REVOCATIONS (50) keys are revoked one
 * after another through the API; for each, `verify` is called every 2 ms until it refuses. Prints p50, p99 and max in ms.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { createVerifier, Verifier } from '../verifier/src/index';
import { freePort, productionSettings, waitFor } from './support';

const ROOT = resolve(__dirname, '..', '..');
const REVOCATIONS = Number(process.env.BENCH_REVOCATIONS ?? 50);
const POSTGRES_URL = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '') ? process.env.DATABASE_URL : undefined;
const AUDIENCE = 'https://bench-resource.example.com';

async function refused(verifier: Verifier, token: string): Promise<boolean> {
  try {
    await verifier.verify(token);
    return false;
  } catch {
    return true;
  }
}

async function main(): Promise<void> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-revocation-'));
  const ports = [await freePort(), await freePort()];
  const issuer = `http://127.0.0.1:${ports[1]}`;
  const base: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'development',
    HOST: '127.0.0.1',
    METRICS_PORT: 'off',
    LOG_LEVEL: 'warn',
    DATA_DIR: dataDir,
    DATABASE_URL: POSTGRES_URL ?? `sqlite:${join(dataDir, 'gatehouse.sqlite')}`,
    DATABASE_SCHEMA: POSTGRES_URL === undefined ? undefined : `bench_${randomBytes(4).toString('hex')}`,
    ...productionSettings(),
    // One issuer for both instances: the verifier follows the second.
    JWT_ISSUER: issuer,
    PUBLIC_BASE_URL: issuer,
    API_KEY_MAX_ACTIVE_PER_USER: String(REVOCATIONS + 10),
  };
  const cli = (...argv: string[]): Record<string, string> =>
    JSON.parse(execFileSync('node', [join(ROOT, 'dist/cli.js'), ...argv], { env: base, encoding: 'utf8' })) as Record<
      string,
      string
    >;
  const admin = cli('bootstrap', '--org', 'bench', '--email', 'bench@bench.test');
  const server = cli('resource-server', 'add', '--name', 'bench', '--audience', AUDIENCE);

  // SQLite: one process writes; PostgreSQL: instance A (revokes) and instance B (the verifier's feed).
  const instances = POSTGRES_URL === undefined ? [ports[1]] : ports;
  const children: ChildProcess[] = instances.map((port) =>
    spawn('node', [join(ROOT, 'dist/main.js')], { env: { ...base, PORT: String(port) }, stdio: 'inherit' }),
  );
  let verifier: Verifier | undefined;
  try {
    for (const port of instances) await waitFor(`http://127.0.0.1:${port}/healthz`, 20_000);
    const revokingAt = `http://127.0.0.1:${instances[0]}`;
    verifier = await createVerifier({
      issuer,
      audience: AUDIENCE,
      clientId: server.client_id,
      clientSecret: server.client_secret,
    });
    const session = { authorization: `Bearer ${admin.session_token}`, 'content-type': 'application/json' };
    const latencies: number[] = [];
    for (let i = 0; i < REVOCATIONS; i += 1) {
      const created = (await (
        await fetch(`${revokingAt}/v1/user-api-keys`, { method: 'POST', headers: session, body: `{"label":"k${i}"}` })
      ).json()) as { api_key: { id: string }; opaque_key: string };
      const { access_token } = (await (
        await fetch(`${revokingAt}/v1/token`, {
          method: 'POST',
          headers: { authorization: `ApiKey ${created.opaque_key}`, 'content-type': 'application/json' },
          body: JSON.stringify({ resource: AUDIENCE }),
        })
      ).json()) as { access_token: string };
      if (await refused(verifier, access_token)) throw new Error('a fresh token was refused');
      const start = performance.now();
      await fetch(`${revokingAt}/v1/user-api-keys/${created.api_key.id}`, { method: 'DELETE', headers: session });
      while (!(await refused(verifier, access_token))) await new Promise((r) => setTimeout(r, 2));
      latencies.push(performance.now() - start);
    }
    latencies.sort((a, b) => a - b);
    const at = (p: number) => latencies[Math.min(latencies.length - 1, Math.ceil((p / 100) * latencies.length) - 1)];
    const where = POSTGRES_URL === undefined ? 'SQLite, one instance' : 'PostgreSQL, revoked at A, verifier on B';
    console.log(
      `revoke -> refused by the verifier (${where}, ${REVOCATIONS} revocations): ` +
        `p50 ${at(50).toFixed(1)} ms, p99 ${at(99).toFixed(1)} ms, max ${latencies.at(-1)!.toFixed(1)} ms`,
    );
  } finally {
    await verifier?.close();
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(
      children.map((child) => new Promise((r) => (child.exitCode !== null ? r(null) : child.once('exit', r)))),
    );
    rmSync(dataDir, { recursive: true, force: true });
  }
}

void main();
