/**
 * `npm run bench:audit`: GET /v1/audit-events with 1,000,000 events (docs/performance.md#audit-log-pages).
 * Builds, bootstraps an organization with the admin CLI, inserts the events with one SQL statement
 * (spread over five organizations, the last 360 days, eight actions, 2,000 actors and 200,000 targets
 * per organization), starts the real server (SQLite by default, PostgreSQL when DATABASE_URL is set)
 * and times, one request after another from this process, the first page, a deep page (a cursor half
 * way down the organization's 600,000 events) and filtered pages, each the median (and p95) of
 * BENCH_AUDIT_REPEAT requests after 3 warm-up requests. Then it ages BENCH_AUDIT_OLD events past
 * AUDIT_RETENTION_DAYS, restarts the server and times the pruning at start, with the first page
 * timed meanwhile.
 * Knobs: BENCH_AUDIT_EVENTS (1000000), BENCH_AUDIT_REPEAT (25), BENCH_AUDIT_OLD (100000; 0 skips the
 * retention step), BENCH_AUDIT_KEEP=1 keeps the database (its path or schema is printed).
 * Not part of the test suite.
 */
import { ChildProcess, execFileSync, spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { performance } from 'node:perf_hooks';
import { loadBetterSqlite3 } from '../src/database/sqlite-driver';
import { Client } from 'pg';
import { AuditCursorCodec } from '../src/audit/audit-cursor';
import { freePort, productionSettings, waitFor } from './support';

// This Node's better-sqlite3 (13 on Node 22+, 12 on Node 20: docs/adr/0019-node-24-and-complete-lock.md).
const Database = loadBetterSqlite3();

const ROOT = resolve(__dirname, '..', '..');
const EVENTS = Number(process.env.BENCH_AUDIT_EVENTS ?? 1_000_000);
const REPEAT = Number(process.env.BENCH_AUDIT_REPEAT ?? 25);
const OLD = Number(process.env.BENCH_AUDIT_OLD ?? 100_000);
const KEEP = process.env.BENCH_AUDIT_KEEP === '1';
const POSTGRES_URL = /^postgres(ql)?:\/\//.test(process.env.DATABASE_URL ?? '') ? process.env.DATABASE_URL : undefined;

/** Deterministic ids of the generated actors and targets: `<prefix>-0000-4000-8000-<12 digits>`. */
const actorId = (n: number): string => `a0000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const targetId = (n: number): string => `70000000-0000-4000-8000-${String(n).padStart(12, '0')}`;
const OTHER_ORGS = [1, 2, 3, 4].map((n) => `0e000000-0000-4000-8000-${String(n).padStart(12, '0')}`);

/**
 * Row i, with x = (i * 2654435761) mod 2^32 (Knuth's multiplicative hash, so that the columns do
 * not follow each other): organization by x % 10 (60 % the bootstrapped one, 10 % each of four
 * others), action by (x / 10) % 1000 (40 % token.exchange_failed, 25 % api_key.created, 20 %
 * api_key.revoked, 5 % rotated, 3 % integration.created, 3.9 % updated, 3 % deleted, 0.1 %
 * organization.updated), actor (x / 10000) % 2000, target i % 200000, a random millisecond of the
 * last 360 days.
 */
const ACTION_CASE = `CASE
  WHEN (x / 10) % 1000 < 400 THEN 'token.exchange_failed'
  WHEN (x / 10) % 1000 < 650 THEN 'api_key.created'
  WHEN (x / 10) % 1000 < 850 THEN 'api_key.revoked'
  WHEN (x / 10) % 1000 < 900 THEN 'api_key.rotated'
  WHEN (x / 10) % 1000 < 930 THEN 'integration.created'
  WHEN (x / 10) % 1000 < 969 THEN 'integration.updated'
  WHEN (x / 10) % 1000 < 999 THEN 'integration.deleted'
  ELSE 'organization.updated' END`;
const SPAN_MS = 360 * 24 * 60 * 60 * 1000;

async function seed(env: NodeJS.ProcessEnv, organizationId: string, count: number): Promise<void> {
  if (POSTGRES_URL === undefined) {
    const db = new Database(env.DATABASE_URL!.slice('sqlite:'.length));
    db.pragma('busy_timeout = 10000');
    const orgCase = `CASE WHEN x % 10 < 6 THEN '${organizationId}' ${OTHER_ORGS.map((org, n) => `WHEN x % 10 = ${6 + n} THEN '${org}'`).join(' ')} ELSE '${OTHER_ORGS[3]}' END`;
    const insert = db.prepare(`
      WITH RECURSIVE n(i) AS (SELECT ? UNION ALL SELECT i + 1 FROM n WHERE i < ?)
      INSERT INTO audit_events (id, occurred_at, action, organization_id, actor_user_id, target_type, target_id, reason, client_ip, request_id)
      SELECT lower(substr(h, 1, 8) || '-' || substr(h, 9, 4) || '-4' || substr(h, 14, 3) || '-8' || substr(h, 18, 3) || '-' || substr(h, 21, 12)),
        strftime('%Y-%m-%dT%H:%M:%fZ', (? - abs(random()) % ${SPAN_MS}) / 1000.0, 'unixepoch'),
        ${ACTION_CASE}, ${orgCase},
        'a0000000-0000-4000-8000-' || printf('%012d', (x / 10000) % 2000),
        'api_key', '70000000-0000-4000-8000-' || printf('%012d', i % 200000),
        CASE WHEN (x / 10) % 1000 >= 650 AND (x / 10) % 1000 < 850 THEN 'user' ELSE NULL END, '203.0.113.9', 'bench-' || i
      FROM (SELECT i, hex(randomblob(16)) AS h, (i * 2654435761) % 4294967296 AS x FROM n)`);
    const chunk = 100_000;
    for (let start = 1; start <= count; start += chunk) {
      db.transaction(() => insert.run(start, Math.min(count, start + chunk - 1), Date.now()))();
    }
    db.exec('PRAGMA wal_checkpoint(TRUNCATE)');
    db.close();
    return;
  }
  const client = new Client({ connectionString: POSTGRES_URL, options: `-c search_path=${env.DATABASE_SCHEMA}` });
  await client.connect();
  try {
    const orgCase = `CASE WHEN x % 10 < 6 THEN $1::uuid ${OTHER_ORGS.map((org, n) => `WHEN x % 10 = ${6 + n} THEN '${org}'::uuid`).join(' ')} ELSE '${OTHER_ORGS[3]}'::uuid END`;
    await client.query(
      `INSERT INTO audit_events (id, occurred_at, action, organization_id, actor_user_id, target_type, target_id, reason, client_ip, request_id)
       SELECT gen_random_uuid(), date_trunc('milliseconds', now() - random() * interval '${SPAN_MS} milliseconds'),
         ${ACTION_CASE}, ${orgCase},
         ('a0000000-0000-4000-8000-' || lpad(((x / 10000) % 2000)::text, 12, '0'))::uuid,
         'api_key', ('70000000-0000-4000-8000-' || lpad((i % 200000)::text, 12, '0'))::uuid,
         CASE WHEN (x / 10) % 1000 >= 650 AND (x / 10) % 1000 < 850 THEN 'user' END, '203.0.113.9', 'bench-' || i
       FROM (SELECT i, (i::bigint * 2654435761) % 4294967296 AS x FROM generate_series(1, $2::int) AS i) AS g`,
      [organizationId, count],
    );
    await client.query('VACUUM ANALYZE audit_events');
  } finally {
    await client.end();
  }
}

/** The position of the organization's `offset`-th event in list order, for a deep cursor. */
async function positionAt(
  env: NodeJS.ProcessEnv,
  organizationId: string,
  offset: number,
): Promise<{ occurredAt: number; id: string }> {
  if (POSTGRES_URL === undefined) {
    const db = new Database(env.DATABASE_URL!.slice('sqlite:'.length), { readonly: true });
    const row = db
      .prepare(
        `SELECT id, occurred_at FROM audit_events WHERE organization_id = ? ORDER BY occurred_at DESC, id DESC LIMIT 1 OFFSET ?`,
      )
      .get(organizationId, offset) as { id: string; occurred_at: string };
    db.close();
    return { occurredAt: Date.parse(row.occurred_at) * 1000, id: row.id };
  }
  const client = new Client({ connectionString: POSTGRES_URL, options: `-c search_path=${env.DATABASE_SCHEMA}` });
  await client.connect();
  try {
    const { rows } = await client.query<{ id: string; us: string }>(
      `SELECT id, (extract(epoch FROM occurred_at) * 1000000)::int8 AS us FROM audit_events
       WHERE organization_id = $1 ORDER BY occurred_at DESC, id DESC LIMIT 1 OFFSET $2`,
      [organizationId, offset],
    );
    return { occurredAt: Number(rows[0].us), id: rows[0].id };
  } finally {
    await client.end();
  }
}

/** Ages `count` of the organization's events past any retention (500 days old). */
async function ageEvents(env: NodeJS.ProcessEnv, organizationId: string, count: number): Promise<void> {
  if (POSTGRES_URL === undefined) {
    const db = new Database(env.DATABASE_URL!.slice('sqlite:'.length));
    db.prepare(
      `UPDATE audit_events SET occurred_at = strftime('%Y-%m-%dT%H:%M:%fZ', (julianday(occurred_at) - 500))
       WHERE id IN (SELECT id FROM audit_events WHERE organization_id = ? LIMIT ?)`,
    ).run(organizationId, count);
    db.close();
    return;
  }
  const client = new Client({ connectionString: POSTGRES_URL, options: `-c search_path=${env.DATABASE_SCHEMA}` });
  await client.connect();
  try {
    await client.query(
      `UPDATE audit_events SET occurred_at = occurred_at - interval '500 days'
       WHERE id IN (SELECT id FROM audit_events WHERE organization_id = $1 LIMIT $2)`,
      [organizationId, count],
    );
    await client.query('VACUUM ANALYZE audit_events');
  } finally {
    await client.end();
  }
}

async function countOlderThan(env: NodeJS.ProcessEnv, days: number): Promise<number> {
  const cutoff = new Date(Date.now() - days * 86_400_000).toISOString();
  if (POSTGRES_URL === undefined) {
    const db = new Database(env.DATABASE_URL!.slice('sqlite:'.length), { readonly: true });
    const row = db.prepare('SELECT COUNT(*) AS n FROM audit_events WHERE occurred_at < ?').get(cutoff) as {
      n: number;
    };
    db.close();
    return row.n;
  }
  const client = new Client({ connectionString: POSTGRES_URL, options: `-c search_path=${env.DATABASE_SCHEMA}` });
  await client.connect();
  try {
    const { rows } = await client.query<{ n: string }>(
      'SELECT COUNT(*) AS n FROM audit_events WHERE occurred_at < $1',
      [cutoff],
    );
    return Number(rows[0].n);
  } finally {
    await client.end();
  }
}

const quantile = (sorted: number[], q: number): number =>
  sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))];

interface Timing {
  name: string;
  events: number;
  next: boolean;
  p50_ms: number;
  p95_ms: number;
}

async function main(): Promise<void> {
  const database = POSTGRES_URL === undefined ? 'sqlite' : 'postgres';
  const dataDir = mkdtempSync(join(tmpdir(), 'gatehouse-bench-audit-'));
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const pepper = randomBytes(32).toString('base64');
  const env: NodeJS.ProcessEnv = {
    PATH: process.env.PATH,
    NODE_ENV: 'production',
    HOST: '127.0.0.1',
    PORT: String(port),
    DATA_DIR: dataDir,
    DATABASE_URL: POSTGRES_URL ?? `sqlite:${join(dataDir, 'gatehouse.sqlite')}`,
    DATABASE_SCHEMA: POSTGRES_URL === undefined ? undefined : `bench_audit_${randomBytes(4).toString('hex')}`,
    ...productionSettings(),
    API_KEY_PEPPER: pepper,
    LOG_LEVEL: process.env.LOG_LEVEL ?? 'warn',
  };
  const bootstrap = JSON.parse(
    execFileSync('node', [join(ROOT, 'dist/cli.js'), 'bootstrap', '--org', 'bench', '--email', 'bench@bench.test'], {
      env,
      encoding: 'utf8',
    }),
  ) as { organization_id: string; session_token: string };
  const org = bootstrap.organization_id;
  console.log(`bench:audit on ${database}: seeding ${EVENTS} events...`);
  const seedStart = performance.now();
  await seed(env, org, EVENTS);
  console.log(`seeded in ${((performance.now() - seedStart) / 1000).toFixed(1)} s`);

  let server: ChildProcess | undefined;
  const startServer = async (): Promise<void> => {
    server = spawn('node', [join(ROOT, 'dist/main.js')], { env, stdio: ['ignore', 'ignore', 'inherit'] });
    await waitFor(`${base}/healthz`, 60_000);
  };
  const stopServer = async (): Promise<void> => {
    if (server === undefined || server.exitCode !== null) return;
    const exited = new Promise((r) => server!.once('exit', r));
    server.kill('SIGTERM');
    await exited;
  };
  const headers = { Authorization: `Bearer ${bootstrap.session_token}` };
  const get = async (
    query: Record<string, string>,
    path = '/v1/audit-events',
  ): Promise<{ ms: number; events: number; next: boolean }> => {
    const started = performance.now();
    const response = await fetch(`${base}${path}?${new URLSearchParams(query).toString()}`, { headers });
    const body = (await response.json()) as { audit_events?: unknown[]; next_cursor?: string | null };
    const ms = performance.now() - started;
    if (response.status !== 200)
      throw new Error(`${JSON.stringify(query)}: ${response.status} ${JSON.stringify(body)}`);
    return { ms, events: body.audit_events?.length ?? 0, next: typeof body.next_cursor === 'string' };
  };
  const time = async (name: string, query: Record<string, string>, path?: string): Promise<Timing> => {
    for (let i = 0; i < 3; i += 1) await get(query, path);
    const times: number[] = [];
    let last = { events: 0, next: false };
    for (let i = 0; i < REPEAT; i += 1) {
      const { ms, ...rest } = await get(query, path);
      times.push(ms);
      last = rest;
    }
    times.sort((a, b) => a - b);
    const round = (ms: number): number => Math.round(ms * 100) / 100;
    return { name, ...last, p50_ms: round(quantile(times, 0.5)), p95_ms: round(quantile(times, 0.95)) };
  };

  try {
    const codec = new AuditCursorCodec(pepper);
    const scope = (filters: Partial<Record<'action' | 'actor' | 'target', string>> = {}): string =>
      JSON.stringify([org, filters.action ?? null, filters.actor ?? null, filters.target ?? null, null, null]);
    const middle = await positionAt(env, org, Math.floor((EVENTS * 0.6) / 2));
    const deep = codec.encode(scope(), middle);
    const deepRevoked = codec.encode(scope({ action: 'api_key.revoked' }), middle);
    const deepActor = codec.encode(scope({ actor: actorId(42) }), middle);
    const day = new Date(Date.now() - 100 * 86_400_000);
    await startServer();

    // The JIT and the database's cache: the first scenario must not pay for them.
    for (let i = 0; i < 50; i += 1) await get(i % 2 === 0 ? {} : { cursor: deep });
    const timings: Timing[] = [];
    const scenarios: Array<[string, Record<string, string>, string?]> = [
      // What any authenticated list costs here (the caller has no keys): the rest is the audit query.
      ['baseline: GET /v1/user-api-keys', {}, '/v1/user-api-keys'],
      ['first page (limit 50)', {}],
      ['first page, limit 200', { limit: '200' }],
      ['deep page (cursor at 300,000th event)', { cursor: deep }],
      ['deep page, limit 200', { cursor: deep, limit: '200' }],
      ['action=api_key.revoked (20 %)', { action: 'api_key.revoked' }],
      ['action=api_key.revoked, deep', { action: 'api_key.revoked', cursor: deepRevoked }],
      ['action=organization.updated (0.1 %)', { action: 'organization.updated' }],
      ['actor_user_id (1 of 2,000)', { actor_user_id: actorId(42) }],
      ['actor_user_id, deep', { actor_user_id: actorId(42), cursor: deepActor }],
      ['target_id (1 of 200,000)', { target_id: targetId(4242) }],
      ['action + actor_user_id', { action: 'api_key.revoked', actor_user_id: actorId(42) }],
      ['action + actor, no match', { action: 'organization.updated', actor_user_id: actorId(43) }],
      [
        'since + until (one day)',
        { since: day.toISOString(), until: new Date(day.getTime() + 86_400_000).toISOString() },
      ],
    ];
    for (const [name, query, path] of scenarios) {
      const timing = await time(name, query, path);
      timings.push(timing);
      console.log(
        `${name.padEnd(42)} ${String(timing.events).padStart(3)} events${timing.next ? ' +next' : '      '}  p50 ${timing.p50_ms.toFixed(2).padStart(7)} ms  p95 ${timing.p95_ms.toFixed(2).padStart(7)} ms`,
      );
    }
    // Following next_cursor from the first page: 20 pages in a row.
    {
      let cursor: string | null = null;
      const started = performance.now();
      for (let page = 0; page < 20; page += 1) {
        const response = await fetch(
          `${base}/v1/audit-events?${new URLSearchParams(cursor === null ? { limit: '200' } : { limit: '200', cursor }).toString()}`,
          { headers },
        );
        cursor = ((await response.json()) as { next_cursor: string | null }).next_cursor;
      }
      console.log(
        `20 pages of 200 following next_cursor: ${((performance.now() - started) / 20).toFixed(2)} ms a page`,
      );
    }

    if (OLD > 0) {
      await stopServer();
      await ageEvents(env, org, OLD);
      const before = await countOlderThan(env, 400);
      console.log(`\nretention: ${before} events older than 400 days; restarting (pruning starts at start)...`);
      const started = performance.now();
      await startServer();
      const during: number[] = [];
      let remaining = before;
      while (remaining > 0 && performance.now() - started < 600_000) {
        during.push((await get({})).ms);
        remaining = await countOlderThan(env, 400);
        await new Promise((r) => setTimeout(r, 50));
      }
      const seconds = (performance.now() - started) / 1000;
      during.sort((a, b) => a - b);
      console.log(
        `pruned ${before - remaining} in ~${seconds.toFixed(1)} s (start included); first page meanwhile: ` +
          `${during.length} requests, p50 ${quantile(during, 0.5).toFixed(2)} ms, p95 ${quantile(during, 0.95).toFixed(2)} ms, max ${during.at(-1)!.toFixed(2)} ms`,
      );
    }
  } finally {
    await stopServer();
    if (KEEP) {
      console.log(`kept: ${env.DATABASE_SCHEMA ?? env.DATABASE_URL}`);
    } else {
      if (env.DATABASE_SCHEMA !== undefined) {
        const client = new Client({ connectionString: POSTGRES_URL });
        await client.connect();
        await client.query(`DROP SCHEMA IF EXISTS "${env.DATABASE_SCHEMA}" CASCADE`);
        await client.end();
      }
      rmSync(dataDir, { recursive: true, force: true });
    }
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exit(1);
});
