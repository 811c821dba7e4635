/**
 * A server under measurement for bench/run.ts and bench/ab.ts: the built checkout at `root` (its dist/main.js and
 * dist/cli.js) on a data directory (SQLite) or schema (PostgreSQL) of its own, seeded as bench/run.ts's header says,
 * with the scenarios (a)-(j) ready to drive. Two of them can run side by side (ports, data and issuers their own).
 */
import { ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import type autocannon from 'autocannon';
import { Client } from 'pg';
import { loadBetterSqlite3 } from '../src/database/sqlite-driver';
import { freePort, productionSettings, waitFor } from './support';
import { BenchScenario, codeGrantScenarios } from './code-grants';
import { WorkloadIssuer } from './workload-issuer';

const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const BASELINE_PATH = process.env.BENCH_BASELINE_PATH ?? '/healthz';
const CODE_RATE = Number(process.env.BENCH_CODE_RATE ?? 6000);
/** BENCH_SERVER_CPUS ("1"): the cores the server may run on (taskset), away from the load generator and the rest. */
const SERVER_CPUS = process.env.BENCH_SERVER_CPUS;
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
export const SMALL_KEYS = 1000;
const POSTGRES_URL = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '') ? process.env.DATABASE_URL : undefined;
export const DATABASE = POSTGRES_URL === undefined ? 'sqlite' : 'postgres';

/** One scenario of bench/run.ts's header: its name ("(b) POST /v1/token"), the load, and what each measurement needs. */
export interface Scenario {
  name: string;
  options: autocannon.Options;
  prepared?: BenchScenario;
}

/** A seeded server and its scenarios. */
export interface Target {
  root: string;
  scenarios: Scenario[];
  /** The server process's pid (for its CPU time), while it runs. */
  pid(): number | undefined;
  /** Stops the server, writes `count` more keys straight into its database, and starts it again. */
  addBulkKeys(count: number): Promise<void>;
  /** Stops the server and starts a new process on the same data. */
  restart(): Promise<void>;
  /** Stops the server and removes its data, its schema and its issuer. */
  close(): Promise<void>;
}

async function json<T>(response: Response): Promise<T> {
  if (!response.ok) throw new Error(`${response.url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** A member's default key scopes as stored (api_keys:read 2 | integrations:read 32, docs/adr/0017-key-scopes-as-a-permission-bit-mask.md). */
const MEMBER_SCOPES = 34;

/** Keys owned by a separate bulk user, inserted straight into the database (no HTTP). */
async function seedBulkKeys(env: NodeJS.ProcessEnv, organizationId: string, count: number): Promise<void> {
  const userId = randomUUID();
  const now = new Date().toISOString();
  if (POSTGRES_URL === undefined) {
    const Database = loadBetterSqlite3();
    const db = new Database(env.DATABASE_URL!.slice('sqlite:'.length));
    db.pragma('busy_timeout = 10000');
    db.prepare('INSERT INTO users (id, email, created_at) VALUES (?, ?, ?)').run(
      userId,
      `bulk-${userId}@bench.test`,
      now,
    );
    db.prepare(
      'INSERT INTO memberships (organization_id, user_id, role, created_at, updated_at) VALUES (?, ?, ?, ?, ?)',
    ).run(organizationId, userId, 'member', now, now);
    const insert = db.prepare(
      `INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, scopes, created_at, updated_at)
       VALUES (?, ?, ?, 'bulk', ?, 'ACTIVE', ${MEMBER_SCOPES}, ?, ?)`,
    );
    const batch = db.transaction((n: number) => {
      for (let i = 0; i < n; i += 1)
        insert.run(randomUUID(), organizationId, userId, randomBytes(32).toString('hex'), now, now);
    });
    for (let done = 0; done < count; done += 100_000) batch(Math.min(100_000, count - done));
    db.close();
    return;
  }
  const client = new Client({ connectionString: POSTGRES_URL, options: `-c search_path=${env.DATABASE_SCHEMA}` });
  await client.connect();
  try {
    await client.query('INSERT INTO users (id, email, created_at) VALUES ($1, $2, now())', [
      userId,
      `bulk-${userId}@bench.test`,
    ]);
    await client.query(
      `INSERT INTO memberships (organization_id, user_id, role, created_at, updated_at) VALUES ($1, $2, 'member', now(), now())`,
      [organizationId, userId],
    );
    await client.query(
      `INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, scopes, created_at, updated_at)
       SELECT gen_random_uuid(), $1, $2, 'bulk', md5(random()::text) || md5(random()::text), 'ACTIVE', ${MEMBER_SCOPES},
         now(), now()
       FROM generate_series(1, $3)`,
      [organizationId, userId, count],
    );
    await client.query('ANALYZE');
  } finally {
    await client.end();
  }
}

async function dropSchema(schema: string): Promise<void> {
  const client = new Client({ connectionString: POSTGRES_URL });
  await client.connect();
  await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  await client.end();
}

/**
 * Starts the server of the checkout at `root` and seeds it for the scenarios whose letters (or comma-separated names)
 * `only` holds: "abh" is (a), (b), (h) and (h2); "h,h2" exactly those named.
 */
export async function startTarget(root: string, only: string): Promise<Target> {
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    // Not production: production's outbound rules refuse an identity provider on loopback, and (h)'s CI issuer answers
    // on this machine. On the measured paths NODE_ENV decides nothing else (logs are JSON either way: stdout is not a
    // terminal), and every secret production requires is set below.
    NODE_ENV: 'test',
    HOST: '127.0.0.1',
    PORT: String(port),
    // The metrics listener stays on, as in production, on a free port (nothing here scrapes it);
    // BENCH_METRICS=off measures without them.
    METRICS_PORT: process.env.BENCH_METRICS === 'off' ? 'off' : '0',
    DATA_DIR: dataDir,
    DATABASE_URL: POSTGRES_URL ?? `sqlite:${join(dataDir, 'gatehouse.sqlite')}`,
    DATABASE_SCHEMA: POSTGRES_URL === undefined ? undefined : `bench_${randomBytes(4).toString('hex')}`,
    ...productionSettings(),
    // The 1,000 clients below are 1,000 keys of one user: above the default cap of 100 active keys.
    API_KEY_MAX_ACTIVE_PER_USER: String(SMALL_KEYS),
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'info',
    REDIS_URL: process.env.REDIS_URL,
    // BENCH_SERVER_ENV="NAME=value NAME=value": more settings for the server, e.g. to measure a limit's cost.
    ...Object.fromEntries(
      (process.env.BENCH_SERVER_ENV ?? '')
        .split(' ')
        .filter((pair) => pair.includes('='))
        .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
    ),
  };

  const bootstrap = JSON.parse(
    execFileSync('node', [join(root, 'dist/cli.js'), 'bootstrap', '--org', 'bench', '--email', 'bench@bench.test'], {
      env: { ...env, LOG_LEVEL: 'warn' },
      encoding: 'utf8',
    }),
  ) as { organization_id: string; session_token: string };
  // (f2)'s keys are a second member's: the first one's 1,000 are what (d) lists and counts.
  const second = JSON.parse(
    execFileSync(
      'node',
      [join(root, 'dist/cli.js'), 'bootstrap', '--org', 'bench', '--email', 'bench-policies@bench.test'],
      { env: { ...env, LOG_LEVEL: 'warn' }, encoding: 'utf8' },
    ),
  ) as { session_token: string };

  // The resource server that introspects in (e), and whose gateway asks forward auth in (f).
  const BENCH_AUDIENCE = 'https://bench.example.com';
  const registered = JSON.parse(
    execFileSync(
      'node',
      [join(root, 'dist/cli.js'), 'resource-server', 'add', '--name', 'bench', '--audience', BENCH_AUDIENCE],
      { env: { ...env, LOG_LEVEL: 'warn' }, encoding: 'utf8' },
    ),
  ) as { client_id: string; client_secret: string };
  const resourceServer = `Basic ${Buffer.from(`${registered.client_id}:${registered.client_secret}`).toString('base64')}`;

  // (h): a CI platform's issuer, trusted by the organization for its workloads (docs/federation.md).
  const workloadIssuer = await WorkloadIssuer.start();
  env.NODE_EXTRA_CA_CERTS = workloadIssuer.caFile;
  // Not execFileSync: the issuer answers the CLI's discovery from this process. Only for (h): a checkout older than
  // federation has no such command.
  const trusted = only.includes('h')
    ? (JSON.parse(
        (
          await promisify(execFile)(
            'node',
            [
              join(root, 'dist/cli.js'),
              'trusted-issuer',
              'add',
              '--org',
              'bench',
              '--issuer',
              workloadIssuer.issuer,
              '--kind',
              'workloads',
            ],
            { env: { ...env, LOG_LEVEL: 'warn' }, encoding: 'utf8' },
          )
        ).stdout,
      ) as { trusted_issuer: { id: string; audience: string } })
    : undefined;

  let server: ChildProcess | undefined;
  const startServer = async (): Promise<void> => {
    const node = ['node', ...SERVER_NODE_ARGS, join(root, 'dist/main.js')];
    // taskset execs node: the pid stays the server's.
    const [command, ...args] = SERVER_CPUS === undefined ? node : ['taskset', '-c', SERVER_CPUS, ...node];
    server = spawn(command, args, {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    await waitFor(`${base}${BASELINE_PATH}`, 120_000);
  };
  const stopServer = async (): Promise<void> => {
    if (server === undefined || server.exitCode !== null) return;
    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  };
  const cleanUp = async (): Promise<void> => {
    await stopServer();
    workloadIssuer.close();
    if (env.DATABASE_SCHEMA !== undefined) await dropSchema(env.DATABASE_SCHEMA);
    rmSync(dataDir, { recursive: true, force: true });
  };

  try {
    await startServer();
    const session = { Authorization: `Bearer ${bootstrap.session_token}`, 'Content-Type': 'application/json' };
    // Every key is a client of its own: the scenarios below go round all of them, one request after
    // another, as many clients with their own keys and tokens would (no single hot row or token).
    // Each has a token for Gatehouse's own API and one for the bench's resource server (RFC 8707 `resource`): a resource
    // server accepts only tokens minted for its audience (docs/resource-servers.md#audiences).
    const clients: Array<{
      keyId: string;
      apiKey: string;
      accessToken: string;
      resourceToken: string;
      subjectToken: string;
      ecSubjectToken: string;
    }> = [];
    // (h)'s workload identity: every client's subject token matches it (each token its own, as each CI job's), and
    // names it (client_id).
    const benchIdentity =
      trusted &&
      (await json<{ workload_identity: { id: string } }>(
        await fetch(`${base}/v1/workload-identities`, {
          method: 'POST',
          headers: session,
          body: JSON.stringify({
            label: 'bench job',
            trusted_issuer_id: trusted.trusted_issuer.id,
            subject: 'bench-job',
            scopes: ['api_keys:read'],
          }),
        }),
      ));
    for (let i = 0; i < SMALL_KEYS; i += 1) {
      const created = await json<{ api_key: { id: string }; opaque_key: string }>(
        await fetch(`${base}/v1/user-api-keys`, { method: 'POST', headers: session, body: `{"label":"k${i}"}` }),
      );
      const { access_token } = await json<{ access_token: string }>(
        await fetch(`${base}/v1/token`, { method: 'POST', headers: { Authorization: `ApiKey ${created.opaque_key}` } }),
      );
      const forResource = await json<{ access_token: string }>(
        await fetch(`${base}/v1/token`, {
          method: 'POST',
          headers: { Authorization: `ApiKey ${created.opaque_key}`, 'Content-Type': 'application/json' },
          body: JSON.stringify({ resource: BENCH_AUDIENCE }),
        }),
      );
      clients.push({
        keyId: created.api_key.id,
        apiKey: created.opaque_key,
        accessToken: access_token,
        resourceToken: forResource.access_token,
        subjectToken: trusted ? workloadIssuer.token('bench-job', trusted.trusted_issuer.audience, 'RS256') : '',
        ecSubjectToken: trusted ? workloadIssuer.token('bench-job', trusted.trusted_issuer.audience, 'ES256') : '',
      });
    }
    // (f2): as many keys of a second member, each with an allowlist of four networks (this process's address in the last)
    // and a rate limit it never reaches, and a token of each for the bench's resource server.
    const restricted: string[] = [];
    if (only.includes('f')) {
      const policies = JSON.stringify({
        allowed_cidrs: ['10.0.0.0/8', '192.168.0.0/16', '2001:db8::/32', '127.0.0.0/8'],
        rate_limit: { requests: 1_000_000, window_seconds: 86_400 },
      });
      for (let i = 0; i < SMALL_KEYS; i += 1) {
        const created = await json<{ opaque_key: string }>(
          await fetch(`${base}/v1/user-api-keys`, {
            method: 'POST',
            headers: { ...session, Authorization: `Bearer ${second.session_token}` },
            body: policies,
          }),
        );
        const token = await json<{ access_token: string }>(
          await fetch(`${base}/v1/token`, {
            method: 'POST',
            headers: { Authorization: `ApiKey ${created.opaque_key}`, 'Content-Type': 'application/json' },
            body: JSON.stringify({ resource: BENCH_AUDIENCE }),
          }),
        );
        restricted.push(token.access_token);
      }
    }
    const roundRobin = (
      method: 'GET' | 'POST',
      request: (
        client: (typeof clients)[number],
        index: number,
      ) => {
        path: string;
        authorization?: string;
        form?: string;
      },
    ): autocannon.Options => {
      let next = 0;
      return {
        url: base,
        requests: [
          {
            method,
            setupRequest: (req: autocannon.Request) => {
              const { path, authorization, form } = request(clients[next], next);
              next = (next + 1) % clients.length;
              const headers = { ...req.headers };
              if (authorization !== undefined) headers.authorization = authorization;
              if (form === undefined) return { ...req, path, headers };
              headers['content-type'] = 'application/x-www-form-urlencoded';
              return { ...req, path, headers, body: form };
            },
          },
        ],
      };
    };

    // (i) and (j): grants through the real flow, then codes and refresh tokens made before each measurement.
    const codeGrants =
      only.includes('i') || only.includes('j')
        ? await codeGrantScenarios(base, session, env, {
            audience: BENCH_AUDIENCE,
            connections: CONNECTIONS,
            codeRate: CODE_RATE,
          })
        : undefined;

    const all: Array<[string, autocannon.Options, BenchScenario?]> = [
      // The baseline goes through the same request set-up in this process as the others, so that
      // what the load generator spends (on the same two cores) is alike in every scenario.
      [`(a) GET ${BASELINE_PATH}`, roundRobin('GET', () => ({ path: BASELINE_PATH }))],
      ['(b) POST /v1/token', roundRobin('POST', (c) => ({ path: '/v1/token', authorization: `ApiKey ${c.apiKey}` }))],
      [
        '(c) GET /v1/user-api-keys/{id}',
        roundRobin('GET', (c) => ({ path: `/v1/user-api-keys/${c.keyId}`, authorization: `Bearer ${c.accessToken}` })),
      ],
      [
        '(d) GET /v1/user-api-keys',
        roundRobin('GET', (c) => ({ path: '/v1/user-api-keys', authorization: `Bearer ${c.accessToken}` })),
      ],
      [
        '(e) POST /oauth/introspect',
        roundRobin('POST', (c) => ({
          path: '/oauth/introspect',
          authorization: resourceServer,
          form: `token=${c.resourceToken}`,
        })),
      ],
      [
        '(f) GET /v1/forward-auth',
        roundRobin('GET', (c) => ({
          path: `/v1/forward-auth?audience=${encodeURIComponent(BENCH_AUDIENCE)}&scope=api_keys:read`,
          authorization: `Bearer ${c.resourceToken}`,
        })),
      ],
      [
        '(f2) GET /v1/forward-auth, allowlist and rate limit',
        roundRobin('GET', (_c, i) => ({
          path: `/v1/forward-auth?audience=${encodeURIComponent(BENCH_AUDIENCE)}&scope=api_keys:read`,
          authorization: `Bearer ${restricted[i]}`,
        })),
      ],
      [
        '(g) POST /oauth/token',
        roundRobin('POST', (c) => ({
          path: '/oauth/token',
          authorization: `Basic ${Buffer.from(`${c.keyId}:${c.apiKey}`).toString('base64')}`,
          form: 'grant_type=client_credentials',
        })),
      ],
      ...(['RS256', 'ES256'] as const).map((alg): [string, autocannon.Options] => [
        alg === 'RS256' ? '(h) POST /oauth/token, token exchange' : '(h2) POST /oauth/token, token exchange, ES256',
        roundRobin('POST', (c) => ({
          path: '/oauth/token',
          form:
            'grant_type=urn%3Aietf%3Aparams%3Aoauth%3Agrant-type%3Atoken-exchange' +
            '&subject_token_type=urn%3Aietf%3Aparams%3Aoauth%3Atoken-type%3Ajwt' +
            `&client_id=${benchIdentity?.workload_identity.id}` +
            `&subject_token=${alg === 'RS256' ? c.subjectToken : c.ecSubjectToken}`,
        })),
      ]),
      ...(codeGrants === undefined
        ? []
        : ([
            [
              '(i) POST /oauth/token, authorization code',
              codeGrants.authorizationCode.options,
              codeGrants.authorizationCode,
            ],
            ['(j) POST /oauth/token, refresh token', codeGrants.refreshToken.options, codeGrants.refreshToken],
          ] as Array<[string, autocannon.Options, BenchScenario]>)),
    ];
    const id = (name: string): string => name.slice(1, name.indexOf(')'));
    const scenarios = all
      .filter(([name]) => (only.includes(',') ? only.split(',').includes(id(name)) : only.includes(name[1])))
      .map(([name, options, prepared]) => ({ name, options, prepared }));
    return {
      root,
      scenarios,
      pid: () => (server?.exitCode === null ? server.pid : undefined),
      async addBulkKeys(count) {
        await stopServer();
        await seedBulkKeys(env, bootstrap.organization_id, count);
        await startServer();
      },
      async restart() {
        await stopServer();
        await startServer();
      },
      close: cleanUp,
    };
  } catch (error) {
    await cleanUp();
    throw error;
  }
}
