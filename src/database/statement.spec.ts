import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { IdLookup, Statement } from './statement';

interface Call {
  name: string;
  text: string;
  values: unknown[];
}

/** A PostgreSQL data source whose pool answers from `rows` and records every query it is sent. */
function postgres(rows: Array<{ id: string; value: string }>, fail?: Error) {
  const calls: Call[] = [];
  const dataSource = {
    options: { type: 'postgres' },
    driver: {
      master: {
        query: (config: Call) => {
          calls.push(config);
          if (fail !== undefined) return Promise.reject(fail);
          const ids = config.values[0] as string[];
          return Promise.resolve({ rows: rows.filter((row) => ids.includes(row.id)) });
        },
      },
    },
  } as unknown as DataSource;
  return { dataSource, calls };
}

describe('IdLookup on PostgreSQL', () => {
  const rows = Array.from({ length: 300 }, (_, i) => ({ id: randomUUID(), value: `v${i}` }));

  it('sends the lookups of one event-loop turn as one ANY($1) query and gives each caller its row', async () => {
    const { dataSource, calls } = postgres(rows);
    const lookup = new IdLookup<{ id: string; value: string }>(dataSource, 'SELECT id, value FROM t', 'id');
    const unknown = randomUUID();
    const found = await Promise.all([
      lookup.find(rows[0].id),
      lookup.find(rows[1].id.toUpperCase()),
      lookup.find(unknown),
      lookup.find(rows[0].id),
    ]);
    expect(found.map((row) => row?.value)).toEqual(['v0', 'v1', undefined, 'v0']);
    expect(calls).toHaveLength(1);
    expect(calls[0].text).toBe('SELECT id, value FROM t WHERE id = ANY($1::uuid[])');
    expect(calls[0].values).toEqual([[rows[0].id, rows[1].id, unknown]]);
  });

  it('sends lookups made after a batch left in a new query', async () => {
    const { dataSource, calls } = postgres(rows);
    const lookup = new IdLookup<{ id: string; value: string }>(dataSource, 'SELECT id, value FROM t', 'id');
    expect((await lookup.find(rows[2].id))?.value).toBe('v2');
    expect((await lookup.find(rows[3].id))?.value).toBe('v3');
    expect(calls).toHaveLength(2);
  });

  it('asks for at most 256 ids a query', async () => {
    const { dataSource, calls } = postgres(rows);
    const lookup = new IdLookup<{ id: string; value: string }>(dataSource, 'SELECT id, value FROM t', 'id');
    const found = await Promise.all(rows.map((row) => lookup.find(row.id)));
    expect(found.map((row) => row?.value)).toEqual(rows.map((row) => row.value));
    expect(calls.map((call) => (call.values[0] as string[]).length)).toEqual([256, 44]);
  });

  it('answers a value that is not a UUID with no row, without a query', async () => {
    const { dataSource, calls } = postgres(rows);
    const lookup = new IdLookup<{ id: string; value: string }>(dataSource, 'SELECT id, value FROM t', 'id');
    await expect(lookup.find("x' OR 1=1 --")).resolves.toBeUndefined();
    expect(calls).toHaveLength(0);
  });

  it("rejects every lookup of a batch with the driver's error when the query fails", async () => {
    const failure = Object.assign(new Error('Query read timeout'), { code: 'ETIMEDOUT' });
    const { dataSource } = postgres(rows, failure);
    const lookup = new IdLookup<{ id: string; value: string }>(dataSource, 'SELECT id, value FROM t', 'id');
    const outcomes = await Promise.allSettled([lookup.find(rows[0].id), lookup.find(rows[1].id)]);
    expect(outcomes).toEqual([
      { status: 'rejected', reason: failure },
      { status: 'rejected', reason: failure },
    ]);
  });
});

describe('IdLookup and statements on SQLite (a file)', () => {
  let dir: string;
  let dataSource: DataSource;
  const rows = Array.from({ length: 3 }, (_, i) => ({ id: randomUUID(), value: `v${i}` }));

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'gatehouse-idlookup-'));
    dataSource = await new DataSource({
      type: 'better-sqlite3',
      database: join(dir, 'db.sqlite'),
      enableWAL: true,
    }).initialize();
    await dataSource.query('CREATE TABLE t (id varchar(36) PRIMARY KEY, value text)');
    for (const row of rows) await dataSource.query('INSERT INTO t VALUES (?, ?)', [row.id, row.value]);
  });

  afterAll(async () => {
    await dataSource.destroy();
    rmSync(dir, { recursive: true, force: true });
  });

  it('gives each caller its row, and no row for an unknown id', async () => {
    const lookup = new IdLookup<{ id: string; value: string }>(dataSource, 'SELECT id, value FROM t', 'id');
    const found = await Promise.all([
      lookup.find(rows[0].id),
      lookup.find(rows[1].id),
      lookup.find(randomUUID()),
      lookup.find('not-a-uuid'),
    ]);
    expect(found.map((row) => row?.value)).toEqual(['v0', 'v1', undefined, undefined]);
  });

  it('sees what the application connection committed before the lookup, and no longer what it deleted', async () => {
    const lookup = new IdLookup<{ id: string; value: string }>(dataSource, 'SELECT id, value FROM t', 'id');
    const id = randomUUID();
    expect(await lookup.find(id)).toBeUndefined();
    await dataSource.query('INSERT INTO t VALUES (?, ?)', [id, 'new']);
    expect(await lookup.find(id)).toEqual({ id, value: 'new' });
    await dataSource.query('DELETE FROM t WHERE id = ?', [id]);
    expect(await lookup.find(id)).toBeUndefined();
  });

  it('runs a statement on the application connection, its $n placeholders bound in order', async () => {
    const select = new Statement<{ value: string }>(dataSource, 'SELECT value FROM t WHERE id = $1 AND value = $2');
    expect(await select.rows([rows[1].id, 'v1'])).toEqual([{ value: 'v1' }]);
    expect(await select.rows([rows[1].id, 'v0'])).toEqual([]);
  });

  it("rejects the lookups of a failed query with the driver's message and code", async () => {
    const lookup = new IdLookup<{ id: string }>(dataSource, 'SELECT id FROM missing', 'id');
    await expect(lookup.find(rows[0].id)).rejects.toMatchObject({
      message: expect.stringContaining('no such table: missing'),
      code: 'SQLITE_ERROR',
    });
  });
});
