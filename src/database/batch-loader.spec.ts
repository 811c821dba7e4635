import { randomUUID } from 'node:crypto';
import { batchedById, MAX_BATCH } from './batch-loader';

interface Row {
  id: string;
  value: string;
}

/** A lookup over `rows` whose every batch query is recorded (the ids it was asked for). */
function lookupOver(rows: Row[], fail?: Error) {
  const queries: string[][] = [];
  const find = batchedById<Row>((ids) => {
    queries.push(ids);
    if (fail !== undefined) return Promise.reject(fail);
    return Promise.resolve(rows.filter((row) => ids.includes(row.id)));
  });
  return { find, queries };
}

describe('batchedById', () => {
  const rows = Array.from({ length: 300 }, (_, i) => ({ id: randomUUID(), value: `v${i}` }));

  it('sends the lookups of one event-loop turn as one query and gives each caller its row', async () => {
    const { find, queries } = lookupOver(rows);
    const unknown = randomUUID();
    const found = await Promise.all([
      find(rows[0].id),
      find(rows[1].id.toUpperCase()),
      find(unknown),
      find(rows[0].id),
    ]);
    expect(found.map((row) => row?.value)).toEqual(['v0', 'v1', undefined, 'v0']);
    expect(queries).toEqual([[rows[0].id, rows[1].id, unknown]]);
  });

  it('waits for the turn to end: lookups asked from separate callbacks of one turn share the query', async () => {
    const { find, queries } = lookupOver(rows);
    const asked = await new Promise<Array<Promise<Row | undefined>>>((resolve) => {
      const promises: Array<Promise<Row | undefined>> = [];
      // Two I/O-like callbacks of the same turn (as two sockets read in one poll phase).
      setImmediate(() => promises.push(find(rows[2].id)));
      setImmediate(() => {
        promises.push(find(rows[3].id));
        resolve(promises);
      });
    });
    expect((await Promise.all(asked)).map((row) => row?.value)).toEqual(['v2', 'v3']);
    expect(queries).toHaveLength(1);
  });

  it('sends lookups made after a batch left in a new query (no cache: each reads the database anew)', async () => {
    const { find, queries } = lookupOver(rows);
    expect((await find(rows[2].id))?.value).toBe('v2');
    expect((await find(rows[2].id))?.value).toBe('v2');
    expect(queries).toHaveLength(2);
  });

  it(`asks for at most ${MAX_BATCH} ids a query`, async () => {
    const { find, queries } = lookupOver(rows);
    const found = await Promise.all(rows.map((row) => find(row.id)));
    expect(found.map((row) => row?.value)).toEqual(rows.map((row) => row.value));
    expect(queries.map((ids) => ids.length)).toEqual([MAX_BATCH, rows.length - MAX_BATCH]);
  });

  it('answers a value that is not a UUID with no row, without a query', async () => {
    const { find, queries } = lookupOver(rows);
    await expect(find("x' OR 1=1 --")).resolves.toBeUndefined();
    await expect(find('')).resolves.toBeUndefined();
    expect(queries).toHaveLength(0);
  });

  it("rejects every lookup of a batch with the query's error", async () => {
    const failure = Object.assign(new Error('Query read timeout'), { code: 'ETIMEDOUT' });
    const { find } = lookupOver(rows, failure);
    const outcomes = await Promise.allSettled([find(rows[0].id), find(rows[1].id)]);
    expect(outcomes).toEqual([
      { status: 'rejected', reason: failure },
      { status: 'rejected', reason: failure },
    ]);
  });
});
