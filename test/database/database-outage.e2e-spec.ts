import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver';
import type { Pool } from 'pg';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { closeAppBehindProxy, startAppBehindProxy, TcpProxy } from '../support/tcp-proxy';
import { POSTGRES_URL, TestApp, TestDatabase, TestUser } from '../support/test-app';
import { waitFor } from '../support/wait';

/**
 * Failing closed (docs/api.md, docs/operations.md#failing-closed-when-the-database-is-unreachable): with PostgreSQL unreachable, every request
 * that needs it answers 503 UNAVAILABLE promptly instead of hanging, and the service recovers by
 * itself once the database is back. A TCP proxy sits between the app and PostgreSQL and simulates
 * the outage. PostgreSQL only: SQLite has no network to lose.
 *
 * Speed is never asserted inside tests (docs/performance.md): the latencies are measured by
 * bench/timings/database-outage.bench.ts (`npm run bench:timings`); the assertions are on status and
 * body, and on recovery within its budget. (The budget is 503 within 2 s, recovery within 5 s.)
 */
const describeOnPostgres = POSTGRES_URL === undefined ? describe.skip : describe;

const UNAVAILABLE = { code: 'UNAVAILABLE', message: 'service unavailable', reason: 'database_unavailable' };
const RECOVERY_BUDGET_MS = 5000;

describeOnPostgres('database outage (PostgreSQL only; skipped unless DATABASE_URL is postgres://)', () => {
  let proxy: TcpProxy;
  let database: TestDatabase;
  let t: TestApp;
  let user: TestUser;
  let keyValue: string;
  let accessToken: string;

  beforeAll(async () => {
    ({ proxy, database, t } = await startAppBehindProxy());
    user = await t.user();
    keyValue = (await t.createKey(user, 'outage')).value;
    accessToken = await t.exchange(keyValue);
  }, 30_000);

  afterAll(() => closeAppBehindProxy({ t, proxy, database }), 30_000);

  /** The requests that need the database. */
  const probes: Array<[string, () => Promise<Response>]> = [
    ['GET /v1/user-api-keys (session token: membership lookup)', () => listKeys(user.token)],
    ['GET /v1/user-api-keys (access token: membership + key status)', () => listKeys(accessToken)],
    ['POST /v1/token', () => t.http().post('/v1/token').set('Authorization', `ApiKey ${keyValue}`)],
    ['GET /readyz', () => t.http().get('/readyz')],
  ];

  function listKeys(token: string): Promise<Response> {
    return t.http().get('/v1/user-api-keys').set('Authorization', `Bearer ${token}`);
  }

  /** Several requests at once, so the pool holds idle connections when the outage starts. */
  async function warmPool(): Promise<void> {
    const responses = await Promise.all(Array.from({ length: 4 }, () => listKeys(accessToken)));
    for (const response of responses) expect(response.status).toBe(200);
  }

  async function expectUnavailable(): Promise<void> {
    for (const [name, request] of probes) {
      const response = await request();
      // Readiness never says which of its checks failed (docs/operations.md#health-endpoints).
      const body = name === 'GET /readyz' ? { ...UNAVAILABLE, reason: 'not_ready' } : UNAVAILABLE;
      expect({ name, status: response.status, body: response.body }).toEqual({ name, status: 503, body });
      // A database outage is not an authentication failure.
      expect(response.headers['www-authenticate']).toBeUndefined();
    }
    const liveness = await t.http().get('/healthz');
    expect(liveness.status).toBe(200);
  }

  /** Polls until a request that needs the database succeeds; fails if it never does in the budget. */
  async function expectRecovery(): Promise<void> {
    let last = 0;
    await waitFor(
      'a request that needs the database answered 200',
      async () => (last = (await listKeys(user.token)).status) === 200,
      { timeoutMs: RECOVERY_BUDGET_MS, everyMs: 100 },
    ).catch((error: Error) => {
      throw new Error(`${error.message} (last status: ${last})`, { cause: error });
    });
    // And it stays recovered: every kind of request succeeds again.
    expect((await listKeys(accessToken)).status).toBe(200);
    expect((await t.http().post('/v1/token').set('Authorization', `ApiKey ${keyValue}`)).status).toBe(200);
    expect((await t.http().get('/readyz')).status).toBe(200);
  }

  it('answers 503 UNAVAILABLE while PostgreSQL refuses connections, and recovers when it is back', async () => {
    await warmPool();
    await proxy.refuse();
    await expectUnavailable();
    await proxy.restore();
    await expectRecovery();
  }, 60_000);

  it('answers 503 UNAVAILABLE while PostgreSQL is silent (black hole), and recovers when it is back', async () => {
    await warmPool();
    proxy.blackhole();
    await expectUnavailable();
    // Twice: requests made after the first timeouts fail as promptly (no connection stays stuck).
    await expectUnavailable();
    await proxy.restore();
    await expectRecovery();
  }, 60_000);

  it('survives an idle connection dropped by the server (no unhandled pg error event)', async () => {
    await warmPool();
    // Resetting every proxied connection makes pg emit 'error' on the idle pooled clients.
    const pool = (t.get(DataSource).driver as PostgresDriver).master as Pool;
    const resets: Error[] = [];
    const onReset = (error: Error): number => resets.push(error);
    pool.on('error', onReset);
    const idle = pool.idleCount;
    expect(idle).toBeGreaterThan(0);
    try {
      await proxy.refuse();
      await proxy.restore();
      // Each idle client got its reset ('error' on the pool, which the app logs) and left the pool.
      await waitFor(`the ${idle} idle connections reported reset`, () => resets.length >= idle);
    } finally {
      pool.off('error', onReset);
    }
    expect((await listKeys(user.token)).status).toBe(200);
  });
});
