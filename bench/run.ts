/**
 * `npm run bench`: the project's benchmark (issue "Performance"). Builds, starts the real server
 * (SQLite by default, PostgreSQL when DATABASE_URL is set) as a child process, seeds it, and drives
 * it with autocannon from this process:
 *   (a) a trivial public route of the same app (the framework baseline)
 *   (b) POST /v1/token
 *   (c) GET /v1/user-api-keys/{id} with an access token
 *   (d) GET /v1/user-api-keys with an access token
 *   (e) POST /oauth/introspect of an access token, by a resource server (HTTP Basic)
 *   (f) GET /v1/forward-auth with an access token and a required scope
 *   (f2) the same with the tokens of keys that have an allowlist and a rate limit (in-process counter unless REDIS_URL)
 *   (g) POST /oauth/token, the client-credentials grant with an API key (HTTP Basic)
 *   (h) POST /oauth/token, the token exchange of a workload's JWT through a workload identity (RFC 8693); the JWT is
 *       RS256, as GitHub Actions, GitLab CI and Kubernetes sign theirs
 *   (h2) the same with ES256 JWTs (an issuer with elliptic-curve keys; their signatures cost more to verify)
 *   (i) POST /oauth/token, the authorization code grant: a fresh code each request (bench/code-grants.ts)
 *   (j) POST /oauth/token, a refresh token: each answer's refresh token is the next request's
 * then (b) again with 1,000,000 keys in the database, with (a) again beside it (to tell the VM's
 * drift from a cost of the key count). The 1,000 keys made through the API are 1,000 clients:
 * (b)-(d) go round all of them (each key, and the access token minted from it), as a service with
 * many users sees it, rather than one key and one token hammered by every connection.
 * Prints requests/s, p50 and p99 (from every response's time, to 0.1 ms), the ratio to (a) and the µs
 * a route adds over (a), then each target of docs/performance.md#targets the run covers, met or not (printed, never
 * asserted), and writes the same as JSON to bench/results/.
 * Each scenario is warmed up (the JIT needs a few seconds), then the scenarios are measured in
 * turn, BENCH_ROUNDS times over, and the median of the rounds is reported: a VM's speed drifts, and
 * interleaving keeps the drift out of the ratios.
 * Knobs: BENCH_DURATION (s per measurement, default 5), BENCH_ROUNDS (3), BENCH_WARMUP (s, 4),
 * BENCH_CONNECTIONS (50), BENCH_BULK_KEYS (1000000), BENCH_BASELINE_PATH (/healthz), BENCH_METRICS (on; off
 * serves no metrics and observes no request: the cost of the metrics), BENCH_SERVER_ENV ("NAME=value ..." for the
 * server), BENCH_CODE_RATE (codes seeded per second of a measurement of (i), 6000).
 * For profiling: BENCH_SCENARIOS (letters to measure, e.g. "b", or names, e.g. "h,"; default "abcdefgh"; the ratios
 * need a),
 * BENCH_SERVER_NODE_ARGS (node flags for the server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
 */
import { ChildProcess, execFile, execFileSync, spawn } from 'node:child_process';
import { randomBytes, randomUUID } from 'node:crypto';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import autocannon from 'autocannon';
import { Client } from 'pg';
import { loadBetterSqlite3 } from '../src/database/sqlite-driver';
import { freePort, productionSettings, waitFor } from './support';
import { BenchScenario, codeGrantScenarios } from './code-grants';
import { WorkloadIssuer } from './workload-issuer';

const ROOT = resolve(__dirname, '..', '..');
const DURATION = Number(process.env.BENCH_DURATION ?? 5);
const ROUNDS = Number(process.env.BENCH_ROUNDS ?? 3);
const WARM_UP = Number(process.env.BENCH_WARMUP ?? 4);
const CONNECTIONS = Number(process.env.BENCH_CONNECTIONS ?? 50);
const BULK_KEYS = Number(process.env.BENCH_BULK_KEYS ?? 1_000_000);
const BASELINE_PATH = process.env.BENCH_BASELINE_PATH ?? '/healthz';
const ONLY = process.env.BENCH_SCENARIOS ?? 'abcdefghij';
const CODE_RATE = Number(process.env.BENCH_CODE_RATE ?? 6000);
const SERVER_NODE_ARGS = (process.env.BENCH_SERVER_NODE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
const SMALL_KEYS = 1000;
const POSTGRES_URL = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '') ? process.env.DATABASE_URL : undefined;

interface Measurement {
  name: string;
  requests_per_second: number;
  p50_ms: number;
  p99_ms: number;
  errors: number;
  non_2xx: number;
  ratio_to_baseline?: number;
  /**
   * 1/throughput minus (a)'s: what the route adds to a request, in µs of server time, while the
   * server's event loop is the bottleneck (it is here: ~100 % of a core, the load generator ~15 %).
   * Unlike the ratio it does not move when the baseline itself gets faster or slower.
   */
  added_us_per_request?: number;
  /**
   * The server process's CPU time (every thread, user and system) per response, in µs. Unlike the
   * throughput it hardly moves when other work on the machine (a neighbour on a shared VM) takes CPU
   * from the server: time the server waits for a core is not counted. Not the database's time.
   */
  server_cpu_us_per_request?: number;
}

/** The pid of the server under measurement, read by `run` for its CPU time. */
let serverPid: number | undefined;

/** CPU time (user + system, every thread) the process has used so far, in ms; Linux only (/proc, 100 ticks a second). */
function cpuMsOf(pid: number | undefined): number | undefined {
  if (pid === undefined) return undefined;
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    // After "pid (comm) ": state is field 3, so utime (14) and stime (15) are at 11 and 12.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return (Number(fields[11]) + Number(fields[12])) * 10;
  } catch {
    return undefined;
  }
}

async function json<T>(response: Response): Promise<T> {
  if (!response.ok) throw new Error(`${response.url}: ${response.status} ${await response.text()}`);
  return (await response.json()) as T;
}

/** The q-quantile of sorted values, to 0.1 ms. */
function quantile(sorted: Float64Array, q: number): number {
  if (sorted.length === 0) return 0;
  return Math.round(sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] * 10) / 10;
}

function run(name: string, options: autocannon.Options): Promise<Measurement> {
  // Every response's time, to the microsecond: autocannon's own percentiles are whole
  // milliseconds, too coarse to tell a 10 % change of a 5 ms median.
  const times: number[] = [];
  const cpuBefore = cpuMsOf(serverPid);
  return new Promise((done, fail) => {
    const instance = autocannon({ connections: CONNECTIONS, duration: DURATION, ...options }, (error, result) => {
      if (error) return fail(error instanceof Error ? error : new Error(String(error)));
      const cpuAfter = cpuMsOf(serverPid);
      if (result.non2xx > 0 && name !== 'warm-up') {
        console.warn(`${name}: non-2xx answers by status: ${JSON.stringify(result.statusCodeStats)}`);
      }
      const sorted = Float64Array.from(times).sort();
      done({
        name,
        requests_per_second: Math.round(result.requests.average),
        p50_ms: quantile(sorted, 0.5),
        p99_ms: quantile(sorted, 0.99),
        errors: result.errors + result.timeouts,
        non_2xx: result.non2xx,
        server_cpu_us_per_request:
          cpuBefore === undefined || cpuAfter === undefined || times.length === 0
            ? undefined
            : ((cpuAfter - cpuBefore) * 1000) / times.length,
      });
    });
    instance.on('response', (_client: unknown, _status: number, _bytes: number, responseTime: number) => {
      times.push(responseTime);
    });
  });
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

/** Per field, the median over the rounds (rounds of one scenario). */
function median(rounds: Measurement[]): Measurement {
  const mid = (values: number[]): number => {
    const sorted = [...values].sort((x, y) => x - y);
    const half = Math.floor(sorted.length / 2);
    return sorted.length % 2 === 1 ? sorted[half] : (sorted[half - 1] + sorted[half]) / 2;
  };
  return {
    name: rounds[0].name,
    requests_per_second: Math.round(mid(rounds.map((r) => r.requests_per_second))),
    p50_ms: Math.round(mid(rounds.map((r) => r.p50_ms)) * 100) / 100,
    p99_ms: Math.round(mid(rounds.map((r) => r.p99_ms)) * 100) / 100,
    errors: rounds.reduce((sum, r) => sum + r.errors, 0),
    non_2xx: rounds.reduce((sum, r) => sum + r.non_2xx, 0),
    server_cpu_us_per_request: rounds.every((r) => r.server_cpu_us_per_request !== undefined)
      ? Math.round(mid(rounds.map((r) => r.server_cpu_us_per_request!)))
      : undefined,
  };
}

function table(rows: Measurement[]): string {
  const header = ['scenario', 'req/s', 'p50 ms', 'p99 ms', 'ratio to (a)', 'µs over (a)', 'server CPU µs', 'errors'];
  const lines = rows.map((r) => [
    r.name,
    String(r.requests_per_second),
    r.p50_ms.toFixed(1),
    r.p99_ms.toFixed(1),
    r.ratio_to_baseline === undefined ? '' : r.ratio_to_baseline.toFixed(2),
    r.added_us_per_request === undefined ? '' : (Math.round(r.added_us_per_request) || 0).toFixed(0),
    r.server_cpu_us_per_request === undefined ? '' : String(r.server_cpu_us_per_request),
    String(r.errors + r.non_2xx),
  ]);
  return aligned(header, lines);
}

/** A Markdown table whose columns line up in a terminal too. */
function aligned(header: string[], lines: string[][]): string {
  const widths = header.map((h, i) => Math.max(h.length, ...lines.map((l) => l[i].length)));
  const fmt = (cells: string[]): string => `| ${cells.map((c, i) => c.padEnd(widths[i])).join(' | ')} |`;
  return [fmt(header), `|${widths.map((w) => '-'.repeat(w + 2)).join('|')}|`, ...lines.map(fmt)].join('\n');
}

/** A target of docs/performance.md#targets as this run measured it: printed and reported, never asserted. */
interface TargetCheck {
  target: string;
  measured: number;
  /** `measured` as printed: to the bound's precision. */
  shown: string;
  bound: string;
  met: boolean;
}

/**
 * The targets of docs/performance.md#targets that the measured scenarios cover (a partial run checks fewer): each
 * throughput as a share of (a)'s, each p99, and each CPU bound against the scenario it is stated against.
 */
function targetChecks(results: Measurement[], database: string): TargetCheck[] {
  const of = (letters: string): Measurement | undefined => results.find((r) => r.name.startsWith(`(${letters})`));
  const checks: TargetCheck[] = [];
  const check = (target: string, measured: number, bound: number, atMost: boolean, decimals = 2): void => {
    // Judged at the precision shown, so that the line never reads "1.30, at most 1.30: NOT MET".
    const shown = measured.toFixed(decimals);
    checks.push({
      target,
      measured,
      shown,
      bound: `${atMost ? 'at most' : 'at least'} ${bound.toFixed(decimals)}`,
      met: atMost ? Number(shown) <= bound : Number(shown) >= bound,
    });
  };
  const baseline = of('a');
  for (const letters of ['b', 'c', 'e', 'f']) {
    const scenario = of(letters);
    if (baseline === undefined || scenario === undefined) continue;
    const bound = database === 'postgres' && (letters === 'b' || letters === 'c') ? 0.6 : 0.75;
    check(`(${letters}) throughput / (a)'s`, scenario.requests_per_second / baseline.requests_per_second, bound, false);
  }
  for (const letters of ['a', 'b', 'c']) {
    const scenario = of(letters);
    if (scenario !== undefined) check(`(${letters}) p99 ms`, scenario.p99_ms, 20, true, 1);
  }
  const cpu: Array<[string, string, number]> = [
    ['g', 'b', 1.05],
    ['h', 'b', 1.3],
    ['f2', 'f', 1.1],
    ['i', 'b', 1.5],
    ['j', 'b', 1.5],
  ];
  for (const [letters, against, bound] of cpu) {
    const scenario = of(letters)?.server_cpu_us_per_request;
    const reference = of(against)?.server_cpu_us_per_request;
    if (scenario === undefined || reference === undefined) continue;
    check(`(${letters}) server CPU / (${against})'s`, scenario / reference, bound, true);
  }
  return checks;
}

function targetTable(checks: TargetCheck[]): string {
  return aligned(
    ['target', 'measured', 'bound', ''],
    checks.map((c) => [c.target, c.shown, c.bound, c.met ? 'met' : 'NOT MET']),
  );
}

async function main(): Promise<void> {
  const database = POSTGRES_URL === undefined ? 'sqlite' : 'postgres';
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

  console.log(
    `bench: ${database}, ${CONNECTIONS} connections, ${DURATION} s per measurement, median of ${ROUNDS} interleaved rounds`,
  );
  const bootstrap = JSON.parse(
    execFileSync('node', [join(ROOT, 'dist/cli.js'), 'bootstrap', '--org', 'bench', '--email', 'bench@bench.test'], {
      env: { ...env, LOG_LEVEL: 'warn' },
      encoding: 'utf8',
    }),
  ) as { organization_id: string; session_token: string };
  // (f2)'s keys are a second member's: the first one's 1,000 are what (d) lists and counts.
  const second = JSON.parse(
    execFileSync(
      'node',
      [join(ROOT, 'dist/cli.js'), 'bootstrap', '--org', 'bench', '--email', 'bench-policies@bench.test'],
      { env: { ...env, LOG_LEVEL: 'warn' }, encoding: 'utf8' },
    ),
  ) as { session_token: string };

  // The resource server that introspects in (e), and whose gateway asks forward auth in (f).
  const BENCH_AUDIENCE = 'https://bench.example.com';
  const registered = JSON.parse(
    execFileSync(
      'node',
      [join(ROOT, 'dist/cli.js'), 'resource-server', 'add', '--name', 'bench', '--audience', BENCH_AUDIENCE],
      { env: { ...env, LOG_LEVEL: 'warn' }, encoding: 'utf8' },
    ),
  ) as { client_id: string; client_secret: string };
  const resourceServer = `Basic ${Buffer.from(`${registered.client_id}:${registered.client_secret}`).toString('base64')}`;

  // (h): a CI platform's issuer, trusted by the organization for its workloads (docs/federation.md).
  const workloadIssuer = await WorkloadIssuer.start();
  env.NODE_EXTRA_CA_CERTS = workloadIssuer.caFile;
  // Not execFileSync: the issuer answers the CLI's discovery from this process.
  const trusted = JSON.parse(
    (
      await promisify(execFile)(
        'node',
        [
          join(ROOT, 'dist/cli.js'),
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
  ) as { trusted_issuer: { id: string; audience: string } };

  let server: ChildProcess | undefined;
  const startServer = async (): Promise<void> => {
    server = spawn('node', [...SERVER_NODE_ARGS, join(ROOT, 'dist/main.js')], {
      env,
      stdio: ['ignore', 'ignore', 'inherit'],
    });
    serverPid = server.pid;
    await waitFor(`${base}${BASELINE_PATH}`, 20_000);
  };
  const stopServer = async (): Promise<void> => {
    if (server === undefined || server.exitCode !== null) return;
    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await exited;
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
    const benchIdentity = await json<{ workload_identity: { id: string } }>(
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
    );
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
        subjectToken: workloadIssuer.token('bench-job', trusted.trusted_issuer.audience, 'RS256'),
        ecSubjectToken: workloadIssuer.token('bench-job', trusted.trusted_issuer.audience, 'ES256'),
      });
    }
    // (f2): as many keys of a second member, each with an allowlist of four networks (this process's address in the last)
    // and a rate limit it never reaches, and a token of each for the bench's resource server.
    const restricted: string[] = [];
    if (ONLY.includes('f')) {
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
      ONLY.includes('i') || ONLY.includes('j')
        ? await codeGrantScenarios(base, session, env, {
            audience: BENCH_AUDIENCE,
            connections: CONNECTIONS,
            codeRate: CODE_RATE,
          })
        : undefined;

    const warm = (options: autocannon.Options): Promise<unknown> => run('warm-up', { ...options, duration: WARM_UP });
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
            `&client_id=${benchIdentity.workload_identity.id}` +
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
    // "abh" measures (a), (b), (h) and (h2); "h,h2" exactly the scenarios named.
    const id = (name: string) => name.slice(1, name.indexOf(')'));
    const scenarios = all.filter(([name]) =>
      ONLY.includes(',') ? ONLY.split(',').includes(id(name)) : ONLY.includes(name[1]),
    );
    for (const [, options, prepared] of scenarios) {
      await prepared?.prepare(WARM_UP);
      await warm(options);
    }
    const rounds: Measurement[][] = scenarios.map(() => []);
    for (let round = 0; round < ROUNDS; round += 1) {
      for (const [index, [name, options, prepared]] of scenarios.entries()) {
        await prepared?.prepare(DURATION);
        rounds[index].push(await run(name, options));
      }
    }
    const results = rounds.map(median);
    const baseline = results.find((r) => r.name.startsWith('(a)'))?.requests_per_second;
    if (baseline !== undefined) {
      for (const r of results) {
        r.ratio_to_baseline = r.requests_per_second / baseline;
        r.added_us_per_request = 1e6 / r.requests_per_second - 1e6 / baseline;
      }
    }
    console.log(`\nwith ${SMALL_KEYS} keys in the database:\n${table(results)}`);
    const targets = targetChecks(results, database);
    if (targets.length > 0) console.log(`\ntargets (docs/performance.md#targets):\n${targetTable(targets)}`);
    if (scenarios.length < all.length) return; // a partial run (profiling): no scaling step, no report

    console.log(`\nseeding ${BULK_KEYS} more keys...`);
    await stopServer();
    const seedStart = Date.now();
    await seedBulkKeys(env, bootstrap.organization_id, BULK_KEYS - SMALL_KEYS);
    console.log(`seeded in ${((Date.now() - seedStart) / 1000).toFixed(1)} s`);
    await startServer();
    // The same warm-up as before, so that the two sizes meet the same JIT state.
    for (const [, options, prepared] of scenarios) {
      await prepared?.prepare(WARM_UP);
      await warm(options);
    }
    // (a) is measured again, interleaved with (b): the VM's speed drifts over the minutes the seeding
    // takes, and (a) moving between the two phases tells drift from a cost of the key count.
    const largeRounds: Measurement[] = [];
    const baselineRounds: Measurement[] = [];
    for (let round = 0; round < ROUNDS; round += 1) {
      baselineRounds.push(await run(`${scenarios[0][0]}, ${BULK_KEYS} keys`, scenarios[0][1]));
      largeRounds.push(await run(`(b) POST /v1/token, ${BULK_KEYS} keys`, scenarios[1][1]));
    }
    const large = median(largeRounds);
    const baselineLarge = median(baselineRounds);
    const small = results[1];
    const scaling = {
      p50_ratio: large.p50_ms / Math.max(small.p50_ms, 0.001),
      p99_ratio: large.p99_ms / Math.max(small.p99_ms, 0.001),
      throughput_ratio: large.requests_per_second / small.requests_per_second,
      baseline_throughput_ratio: baselineLarge.requests_per_second / results[0].requests_per_second,
    };
    console.log(`\n${table([{ ...small, name: `(b) POST /v1/token, ${SMALL_KEYS} keys` }, large])}`);
    console.log(
      `\n(b) at ${BULK_KEYS} vs ${SMALL_KEYS} keys: p50 x${scaling.p50_ratio.toFixed(2)}, p99 x${scaling.p99_ratio.toFixed(2)}, ` +
        `throughput x${scaling.throughput_ratio.toFixed(2)} ` +
        `((a) measured again alongside: throughput x${scaling.baseline_throughput_ratio.toFixed(2)}, the machine's drift)`,
    );

    const report = {
      database,
      connections: CONNECTIONS,
      duration_s: DURATION,
      rounds: ROUNDS,
      warm_up_s: WARM_UP,
      node: process.version,
      at: new Date().toISOString(),
      scenarios: results,
      targets,
      token_exchange_scaling: {
        small_keys: SMALL_KEYS,
        large_keys: BULK_KEYS,
        small,
        large,
        baseline_small: results[0],
        baseline_large: baselineLarge,
        ...scaling,
      },
    };
    const outDir = join(ROOT, 'bench', 'results');
    mkdirSync(outDir, { recursive: true });
    const file = join(outDir, `${database}-latest.json`);
    writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
    console.log(`\nwritten: ${file}`);
  } finally {
    await stopServer();
    workloadIssuer.close();
    if (env.DATABASE_SCHEMA !== undefined) await dropSchema(env.DATABASE_SCHEMA);
    rmSync(dataDir, { recursive: true, force: true });
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
