import { Pool, PoolClient, PoolConfig } from 'pg';
import { TimeoutSafePgClient } from '../../src/database/pg-client';
import { TcpProxy } from '../support/tcp-proxy';
import { POSTGRES_URL } from '../support/test-app';
import { waitFor } from '../support/wait';

/**
 * TimeoutSafePgClient (docs/adr/0014-timeout-safe-pg-client.md) against the real PostgreSQL, with a
 * TCP proxy that goes silent so that pg's `query_timeout` fires. PostgreSQL only: SQLite has no
 * network to lose.
 *
 * The first test is the canary: it reproduces the pg bug with the stock client. If a pg upgrade
 * fixes the bug, that test fails and says so; the workaround may then be deleted.
 */
const describeOnPostgres = POSTGRES_URL === undefined ? describe.skip : describe;

/** Far above a local SELECT 1 even on a busy machine, short enough to keep the suite quick. */
const QUERY_TIMEOUT_MS = 500;
const READ_TIMEOUT = 'Query read timeout';

describeOnPostgres('TimeoutSafePgClient (PostgreSQL only; skipped unless DATABASE_URL is postgres://)', () => {
  let proxy: TcpProxy;
  let pools: Pool[];
  /** What the pool reports about idle connections that broke (the app logs these: poolErrorHandler). */
  let poolErrors: string[];

  beforeEach(async () => {
    const target = new URL(POSTGRES_URL!);
    proxy = new TcpProxy(target.hostname, Number(target.port || 5432));
    await proxy.start();
    pools = [];
    poolErrors = [];
  });

  afterEach(async () => {
    // The proxy first: a pool cannot end a connection that never answers.
    await proxy.close();
    await Promise.all(pools.map((pool) => pool.end()));
  });

  /** A pool through the proxy, as data-source-options.ts configures it (the parts that matter here). */
  function poolThroughProxy(config: PoolConfig): Pool {
    const url = new URL(POSTGRES_URL!);
    url.hostname = '127.0.0.1';
    url.port = String(proxy.port);
    const pool = new Pool({ connectionString: url.toString(), connectionTimeoutMillis: 2000, ...config });
    pool.on('error', (error) => poolErrors.push(error.message));
    pools.push(pool);
    return pool;
  }

  /** Opens `count` connections that have answered a query, and puts them back in the pool idle. */
  async function warm(pool: Pool, count: number): Promise<PoolClient[]> {
    const clients = await Promise.all(Array.from({ length: count }, () => pool.connect()));
    for (const client of clients) expect((await client.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    for (const client of clients) client.release();
    expect(pool.idleCount).toBe(count);
    return clients;
  }

  /** Checks a connection out, lets its query hit query_timeout, and releases it as TypeORM does (no error). */
  async function timeOutOneQuery(pool: Pool): Promise<PoolClient> {
    const client = await pool.connect();
    // Checked out, a client has no error listener of the pool's; a pg that fixes the bug may emit one.
    client.on('error', () => undefined);
    try {
      await expect(client.query('SELECT 1')).rejects.toThrow(READ_TIMEOUT);
    } finally {
      client.release();
    }
    return client;
  }

  it('canary: with the stock pg Client, a connection whose query hit query_timeout stays in the pool, stuck', async () => {
    const pool = poolThroughProxy({ max: 1, query_timeout: QUERY_TIMEOUT_MS });
    await warm(pool, 1);
    proxy.blackhole();
    const timedOut = await timeOutOneQuery(pool);
    // The database answers again (new connections are forwarded); the old connection stays silent.
    await proxy.restore();

    const next = await pool.connect();
    next.on('error', () => undefined);
    const outcome = await next.query('SELECT 1').then(
      () => 'was answered',
      (error: Error) => `failed with "${error.message}"`,
    );
    next.release();
    const reproduced = next === timedOut && outcome === `failed with "${READ_TIMEOUT}"`;
    if (!reproduced) {
      throw new Error(
        `pg no longer leaves a connection stuck after query_timeout (the pool handed out ${
          next === timedOut ? 'the same connection' : 'a new connection'
        }, and its next query ${outcome}): ` +
          'TimeoutSafePgClient (src/database/pg-client.ts) may no longer be needed; ' +
          'see "When to delete this" in docs/adr/0014-timeout-safe-pg-client.md.',
      );
    }
  });

  it('closes the connection whose query hit query_timeout: the next statement on it fails at once, the pool opens a new one', async () => {
    const pool = poolThroughProxy({ max: 1, query_timeout: QUERY_TIMEOUT_MS, Client: TimeoutSafePgClient });
    const [warmed] = await warm(pool, 1);
    proxy.blackhole();

    const client = await pool.connect();
    expect(client).toBe(warmed);
    client.on('error', () => undefined);
    try {
      await expect(client.query('SELECT 1')).rejects.toThrow(READ_TIMEOUT);
      // A ROLLBACK after the failed statement does not wait behind it for another timeout.
      await expect(client.query('ROLLBACK')).rejects.toThrow(/not queryable/);
    } finally {
      client.release();
    }
    expect(pool.totalCount).toBe(0);

    await proxy.restore();
    const next = await pool.connect();
    try {
      expect(next).not.toBe(client);
      expect((await next.query('SELECT 1 AS one')).rows).toEqual([{ one: 1 }]);
    } finally {
      next.release();
    }
  });

  it("drops the pool's idle connections to the silent server too, so no later request waits out a timeout", async () => {
    const pool = poolThroughProxy({ max: 3, query_timeout: QUERY_TIMEOUT_MS, Client: TimeoutSafePgClient });
    const warmed = await warm(pool, 3);
    proxy.blackhole();

    await timeOutOneQuery(pool);
    // The two idle connections are destroyed; the pool removes them, and reports each as it does a
    // connection the server dropped, once their sockets have closed (later in this event-loop turn).
    await waitFor('the pool to remove the idle connections', () => pool.totalCount === 0, { timeoutMs: 2000 });
    expect(poolErrors).toEqual(['Connection terminated unexpectedly', 'Connection terminated unexpectedly']);

    await proxy.restore();
    const clients = await Promise.all([pool.connect(), pool.connect(), pool.connect()]);
    try {
      for (const client of clients) expect(warmed).not.toContain(client);
      const answers = await Promise.all(clients.map((client) => client.query('SELECT 1 AS one')));
      expect(answers.map((answer) => answer.rows)).toEqual([[{ one: 1 }], [{ one: 1 }], [{ one: 1 }]]);
    } finally {
      for (const client of clients) client.release();
    }
  });
});
