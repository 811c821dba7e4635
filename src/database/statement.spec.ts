import { randomUUID } from 'node:crypto';
import type { DataSource } from 'typeorm';
import { IdLookup } from './statement';

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
