/**
 * `npm run bench:exposed`: does the answer of POST /v1/api-keys/exposed tell whether a reported key
 * was real? (docs/adr/0020-exposed-key-reports-answer-at-a-floor.md). Builds, starts the real server
 * (SQLite by default, PostgreSQL when DATABASE_URL is set) as a child process, seeds ACTIVE keys
 * straight into the database (their secrets known to this process), then sends reports one at a
 * time, the scenarios interleaved (one report of each in turn, so that the machine's drift falls on
 * all of them alike), and prints the client-side latency of each scenario: median, p90, p99, max.
 *   real-1       one real ACTIVE key (revoked by the report)
 *   unknown-1    one well-formed key that was never issued
 *   wrong-1      a real key id with a wrong secret
 *   mix-100      100 entries: 20 real ACTIVE keys, 80 never issued
 *   unknown-100  100 entries, none issued
 *   real-100     100 real ACTIVE keys (the largest write one report can cause)
 * After each report the first reported key is exchanged at once (POST /v1/token) and the answer
 * checked: a real key must already be refused as revoked ("revoked at once"); the count of those that
 * were not is printed (it must be 0).
 * Knobs: BENCH_REPORTS (reports per scenario, default 200), BENCH_FLOOR_MS (the server's
 * EXPOSED_REPORT_MIN_RESPONSE_MS; unset: its default), BENCH_WARMUP_REPORTS (20, not measured).
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { createHmac, randomBytes, randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { loadBetterSqlite3 } from '../src/database/sqlite-driver';
import { Client } from 'pg';
import { ApiKeyCodec } from '../src/api-keys/api-key-codec';
import { freePort, productionSettings, waitFor } from './support';

// This Node's better-sqlite3 (13 on Node 22+, 12 on Node 20: docs/adr/0019-node-24-and-complete-lock.md).
const Database = loadBetterSqlite3();

const ROOT = resolve(__dirname, '..', '..');
const REPORTS = Number(process.env.BENCH_REPORTS ?? 200);
const WARM_UP = Number(process.env.BENCH_WARMUP_REPORTS ?? 20);
const FLOOR_MS = process.env.BENCH_FLOOR_MS;
const POSTGRES_URL = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '') ? process.env.DATABASE_URL : undefined;
const codec = new ApiKeyCodec('dev');

interface Scenario {
  name: string;
  /** Real keys one report of it uses up (each report needs fresh ones: a reported key is revoked). */
  realPerReport: number;
  body(real: string[]): string[];
}

const unknown = (): string => codec.format(randomUUID(), ApiKeyCodec.newSecret());
const SCENARIOS: Scenario[] = [
  { name: 'real-1', realPerReport: 1, body: (real) => real },
  { name: 'unknown-1', realPerReport: 0, body: () => [unknown()] },
  { name: 'wrong-1', realPerReport: 0, body: () => [codec.format(wrongSecretId, ApiKeyCodec.newSecret())] },
  { name: 'mix-100', realPerReport: 20, body: (real) => [...real, ...Array.from({ length: 80 }, unknown)] },
  { name: 'unknown-100', realPerReport: 0, body: () => Array.from({ length: 100 }, unknown) },
  { name: 'real-100', realPerReport: 100, body: (real) => real },
];
/** An ACTIVE key that is only ever reported with wrong secrets. */
let wrongSecretId = '';

/** ACTIVE keys of one user of `organizationId`, inserted straight into the database; returns their values. */
async function seedKeys(env: NodeJS.ProcessEnv, organizationId: string, count: number): Promise<string[]> {
  const userId = randomUUID();
  const now = new Date().toISOString();
  const keys = Array.from({ length: count }, () => {
    const id = randomUUID();
    const secret = ApiKeyCodec.newSecret();
    const hash = createHmac('sha256', Buffer.from(env.API_KEY_PEPPER!, 'utf8')).update(secret).digest('hex');
    return { id, hash, value: codec.format(id, secret) };
  });
  if (POSTGRES_URL === undefined) {
    const db = new Database(env.DATABASE_URL!.slice('sqlite:'.length));
    db.pragma('busy_timeout = 10000');
    db.prepare('INSERT INTO users (id, email, created_at) VALUES (?, ?, ?)').run(userId, `${userId}@bench.test`, now);
    db.prepare(
      'INSERT INTO memberships (organization_id, user_id, role, created_at, updated_at) VALUES (?, ?, ?, ?, ?)',
    ).run(organizationId, userId, 'member', now, now);
    const insert = db.prepare(
      `INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, created_at, updated_at)
       VALUES (?, ?, ?, 'bench', ?, 'ACTIVE', ?, ?)`,
    );
    db.transaction(() => keys.forEach((key) => insert.run(key.id, organizationId, userId, key.hash, now, now)))();
    db.close();
  } else {
    const client = new Client({ connectionString: POSTGRES_URL, options: `-c search_path=${env.DATABASE_SCHEMA}` });
    await client.connect();
    try {
      await client.query('INSERT INTO users (id, email, created_at) VALUES ($1, $2, now())', [
        userId,
        `${userId}@bench.test`,
      ]);
      await client.query(
        `INSERT INTO memberships (organization_id, user_id, role, created_at, updated_at) VALUES ($1, $2, 'member', now(), now())`,
        [organizationId, userId],
      );
      await client.query(
        `INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, created_at, updated_at)
         SELECT id, $1, $2, 'bench', hash, 'ACTIVE', now(), now() FROM unnest($3::uuid[], $4::text[]) AS k(id, hash)`,
        [organizationId, userId, keys.map((key) => key.id), keys.map((key) => key.hash)],
      );
      await client.query('ANALYZE');
    } finally {
      await client.end();
    }
  }
  return keys.map((key) => key.value);
}

function quantile(sorted: number[], q: number): number {
  return sorted[Math.min(sorted.length - 1, Math.ceil(q * sorted.length) - 1)];
}

async function main(): Promise<void> {
  const database = POSTGRES_URL === undefined ? 'sqlite' : 'postgres';
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-exposed-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const schema = POSTGRES_URL === undefined ? undefined : `bench_${randomBytes(4).toString('hex')}`;
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    DATABASE_URL: POSTGRES_URL ?? `sqlite:${join(dataDir, 'gatehouse.sqlite')}`,
    DATABASE_SCHEMA: schema,
    ...productionSettings(),
    EXPOSED_REPORTS_PER_HOUR: '100000',
    // Each check below is a refused exchange: the failure limit must not answer 429 instead.
    TOKEN_FAILURE_LIMIT_PER_MINUTE: '100000',
    EXPOSED_REPORT_MIN_RESPONSE_MS: FLOOR_MS,
    LOG_LEVEL: 'warn',
  };
  const bootstrap = JSON.parse(
    execFileSync('node', [join(ROOT, 'dist/cli.js'), 'bootstrap', '--org', 'bench', '--email', 'bench@bench.test'], {
      env,
      encoding: 'utf8',
    }),
  ) as { organization_id: string };

  const rounds = WARM_UP + REPORTS;
  const pools = new Map<string, string[]>();
  for (const scenario of SCENARIOS) {
    pools.set(scenario.name, await seedKeys(env, bootstrap.organization_id, scenario.realPerReport * rounds));
  }
  const [wrong] = await seedKeys(env, bootstrap.organization_id, 1);
  wrongSecretId = codec.parse(wrong)!.keyId;

  const server: ChildProcess = spawn('node', [join(ROOT, 'dist/main.js')], {
    env,
    stdio: ['ignore', 'ignore', 'inherit'],
  });
  try {
    await waitFor(`${base}/healthz`, 20_000);
    console.log(
      `exposed-key reports on ${database}: ${REPORTS} reports per scenario (after ${WARM_UP} not measured), one at a time, interleaved; EXPOSED_REPORT_MIN_RESPONSE_MS=${FLOOR_MS ?? '(default)'}`,
    );
    const latencies = new Map<string, number[]>(SCENARIOS.map((scenario) => [scenario.name, []]));
    let notRevokedAtOnce = 0;
    let realChecked = 0;
    for (let round = 0; round < rounds; round += 1) {
      for (const scenario of SCENARIOS) {
        const pool = pools.get(scenario.name)!;
        const real = pool.slice(round * scenario.realPerReport, (round + 1) * scenario.realPerReport);
        const body = JSON.stringify({ keys: scenario.body(real) });
        const started = performance.now();
        const response = await fetch(`${base}/v1/api-keys/exposed`, {
          method: 'POST',
          headers: { 'Content-Type': 'application/json' },
          body,
        });
        const text = await response.text();
        const ms = performance.now() - started;
        if (response.status !== 202 || text !== '{}') throw new Error(`${scenario.name}: ${response.status} ${text}`);
        if (round >= WARM_UP) latencies.get(scenario.name)!.push(ms);
        if (real.length > 0) {
          // Right after the answer: the key must already be refused as revoked.
          const exchange = await fetch(`${base}/v1/token`, {
            method: 'POST',
            headers: { Authorization: `ApiKey ${real[0]}` },
          });
          const answer = (await exchange.json()) as { message?: string };
          realChecked += 1;
          if (answer.message !== 'api key revoked') {
            if (notRevokedAtOnce === 0)
              console.log(`${scenario.name}: exchanged right after the report: ${exchange.status} ${answer.message}`);
            notRevokedAtOnce += 1;
          }
        }
      }
    }
    const rows = SCENARIOS.map((scenario) => {
      const sorted = latencies.get(scenario.name)!.sort((a, b) => a - b);
      return {
        scenario: scenario.name,
        median_ms: +quantile(sorted, 0.5).toFixed(2),
        p90_ms: +quantile(sorted, 0.9).toFixed(2),
        p99_ms: +quantile(sorted, 0.99).toFixed(2),
        max_ms: +sorted[sorted.length - 1].toFixed(2),
      };
    });
    console.table(rows);
    const by = new Map(rows.map((row) => [row.scenario, row]));
    const delta = (a: string, b: string): string =>
      `${a} - ${b}: median ${(by.get(a)!.median_ms - by.get(b)!.median_ms).toFixed(2)} ms, p90 ${(by.get(a)!.p90_ms - by.get(b)!.p90_ms).toFixed(2)} ms`;
    console.log(delta('real-1', 'unknown-1'));
    console.log(delta('wrong-1', 'unknown-1'));
    console.log(delta('mix-100', 'unknown-100'));
    console.log(delta('real-100', 'unknown-100'));
    console.log(
      `reported real keys exchanged right after the 202: ${realChecked}, not yet revoked: ${notRevokedAtOnce}`,
    );
  } finally {
    const exited = new Promise((r) => server.once('exit', r));
    server.kill('SIGTERM');
    await exited;
    rmSync(dataDir, { recursive: true, force: true });
    if (schema !== undefined) {
      const client = new Client({ connectionString: POSTGRES_URL });
      await client.connect();
      await client.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
      await client.end();
    }
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
