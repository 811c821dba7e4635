import type { Pool, QueryResult } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';

/**
 * Raw SQL in a repository is written once, at construction, with the driver's own placeholders (TypeORM's
 * `Driver.createParameter`): `$n` on PostgreSQL, `?` on SQLite.
 */
export function placeholders(dataSource: DataSource): (n: number) => string {
  return (n) => dataSource.driver.createParameter(`p${n}`, n - 1);
}

/** A condition "`column` is one of a list of ids" that takes the whole list as one parameter. */
export interface IdListCondition {
  sql: string;
  /** The parameter value for a list of ids. */
  bind(ids: readonly string[]): unknown;
}

/**
 * One statement text whatever the list's length: PostgreSQL `= ANY($n::uuid[])` with an array, SQLite `IN (SELECT value
 * FROM json_each(?))` with a JSON array (the primary-key index is used either way: the repositories' query-plan tests
 * check it).
 */
export function idListCondition(dataSource: DataSource, column: string, n: number): IdListCondition {
  const parameter = placeholders(dataSource)(n);
  if (dataSource.options.type === 'postgres') {
    return { sql: `${column} = ANY(${parameter}::uuid[])`, bind: (ids) => ids };
  }
  return { sql: `${column} IN (SELECT value FROM json_each(${parameter}))`, bind: (ids) => JSON.stringify(ids) };
}

/** Runs one read with fixed SQL and returns its rows. */
export type RowReader = <Row>(sql: string, parameters: unknown[]) => Promise<Row[]>;

/**
 * The reader for the hot paths' reads (a key and its owner on every exchange and access-token request, a role on every
 * session-token request) (docs/adr/0010-data-access-repositories.md).
 */
export function rowReader(dataSource: DataSource): RowReader {
  if (dataSource.options.type !== 'postgres') {
    return <Row>(sql: string, parameters: unknown[]) => dataSource.query<Row[]>(sql, parameters);
  }
  const driver = dataSource.driver as PostgresDriver;
  return async <Row>(sql: string, parameters: unknown[]): Promise<Row[]> => {
    const pool = driver.master as Pool;
    const result: QueryResult = await pool.query(sql, parameters);
    return result.rows as Row[];
  };
}
