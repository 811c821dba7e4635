import type { DataSource, EntityManager } from 'typeorm';
import { Dialect, join, param, raw, sql } from './sql';

function dialect(type: 'postgres' | 'better-sqlite3'): Dialect {
  return Dialect.of({ options: { type }, driver: {}, query: jest.fn() } as unknown as DataSource);
}

describe('sql and Dialect', () => {
  const owner = sql`user_id = ${param('userId')} AND organization_id = ${param('organizationId')}`;
  const query = sql`SELECT 1 FROM api_keys WHERE ${owner} AND id <> ${param('id')} OR ${owner}`;
  const args = { userId: 'u', organizationId: 'o', id: 'k' };

  it('numbers PostgreSQL placeholders once per name, in order of first use', () => {
    const statement = dialect('postgres').prepare<typeof args>(query);
    expect(statement.text).toBe(
      'SELECT 1 FROM api_keys WHERE user_id = $1 AND organization_id = $2 AND id <> $3 OR user_id = $1 AND organization_id = $2',
    );
    expect(statement.values(args)).toEqual(['u', 'o', 'k']);
  });

  it('writes one SQLite placeholder per occurrence, with its value repeated', () => {
    const statement = dialect('better-sqlite3').prepare<typeof args>(query);
    expect(statement.text).toBe(
      'SELECT 1 FROM api_keys WHERE user_id = ? AND organization_id = ? AND id <> ? OR user_id = ? AND organization_id = ?',
    );
    expect(statement.values(args)).toEqual(['u', 'o', 'k', 'u', 'o']);
  });

  it('binds an id list as an array (PostgreSQL) or JSON text (SQLite), one text for any length', () => {
    const pg = dialect('postgres');
    const lite = dialect('better-sqlite3');
    const pgList = pg.prepare<{ ids: string[] }>(sql`SELECT id FROM t WHERE ${pg.idIn('id', 'ids')}`);
    const liteList = lite.prepare<{ ids: string[] }>(sql`SELECT id FROM t WHERE ${lite.idIn('id', 'ids')}`);
    expect(pgList.text).toBe('SELECT id FROM t WHERE id = ANY($1::uuid[])');
    expect(pgList.values({ ids: ['a', 'b'] })).toEqual([['a', 'b']]);
    expect(liteList.text).toBe('SELECT id FROM t WHERE id IN (SELECT value FROM json_each(?))');
    expect(liteList.values({ ids: ['a', 'b'] })).toEqual(['["a","b"]']);
  });

  it('keeps the differences in the dialect: casts, indexes, RETURNING, locks', () => {
    const pg = dialect('postgres');
    const lite = dialect('better-sqlite3');
    const update = sql`UPDATE t SET a = ${param('a')} RETURNING id`;
    expect(pg.prepare(pg.returning(update, 'id')).text).toBe(
      'WITH changed AS (UPDATE t SET a = $1 RETURNING id) SELECT id FROM changed',
    );
    expect(lite.prepare(lite.returning(update, 'id')).text).toBe('UPDATE t SET a = ? RETURNING id');
    expect(pg.prepare(sql`${pg.cast(param('x'), 'uuid')} FROM ${pg.table('t', 'i')}`).text).toBe('$1::uuid FROM t');
    expect(lite.prepare(sql`${lite.cast(param('x'), 'uuid')} FROM ${lite.table('t', 'i')}`).text).toBe(
      '? FROM t INDEXED BY i',
    );
    expect(lite.transactionLock(1, raw('k'))).toBeNull();
    expect(pg.prepare(pg.transactionLock(1, sql`${param('k')}`)!).text).toBe(
      'SELECT pg_advisory_xact_lock(1, hashtext($1))',
    );
  });

  it.each(['postgres', 'better-sqlite3'] as const)(
    'counts the rows a write changed on %s: in the transaction, or on a query runner of its own, released',
    async (type) => {
      const db = dialect(type);
      const statement = db.prepare<{ at: string }>(sql`DELETE FROM t WHERE at < ${param('at')}`);
      const inTransaction = { query: jest.fn().mockResolvedValue({ affected: 3 }), release: jest.fn() };
      const tx = { queryRunner: inTransaction } as unknown as EntityManager;
      expect(await db.affected(tx, statement, { at: 'x' })).toBe(3);
      expect(inTransaction.query).toHaveBeenCalledWith(statement.text, ['x'], true);
      expect(inTransaction.release).not.toHaveBeenCalled();

      // A result without a count (the driver gave none): 0.
      const own = { query: jest.fn().mockResolvedValue({}), release: jest.fn().mockResolvedValue(undefined) };
      const manager = { connection: { createQueryRunner: () => own } } as unknown as EntityManager;
      expect(await db.affected(manager, statement, { at: 'y' })).toBe(0);
      expect(own.query).toHaveBeenCalledWith(statement.text, ['y'], true);
      expect(own.release).toHaveBeenCalledTimes(1);

      own.query.mockRejectedValueOnce(new Error('failed'));
      await expect(db.affected(manager, statement, { at: 'z' })).rejects.toThrow('failed');
      expect(own.release).toHaveBeenCalledTimes(2);
    },
  );

  it('joins fragments and reads JSON records on both databases', () => {
    const pg = dialect('postgres');
    const lite = dialect('better-sqlite3');
    const columns = [
      ['id', 'uuid'],
      ['at', 'timestamptz'],
    ] as const;
    expect(pg.prepare(sql`FROM ${pg.jsonRecords('r', 'u', columns)}`).text).toBe(
      'FROM json_to_recordset($1::json) AS u(id uuid, at timestamptz)',
    );
    const statement = lite.prepare<{ r: object[] }>(sql`FROM ${lite.jsonRecords('r', 'u', columns)}`);
    expect(statement.text).toBe("FROM (SELECT value ->> 'id' AS id, value ->> 'at' AS at FROM json_each(?)) AS u");
    expect(statement.values({ r: [{ id: 'a', at: 'b' }] })).toEqual(['[{"id":"a","at":"b"}]']);
    expect(pg.prepare(join([sql`a = ${param('a')}`, sql`b = ${param('b')}`], ' AND ')).text).toBe('a = $1 AND b = $2');
  });
});
