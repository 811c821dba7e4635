import type { Pool, QueryResult } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';

/** Raw SQL is written once, at construction, with the driver's placeholders (`$n` or `?`). */
export function placeholders(dataSource: DataSource): (n: number) => string {
  return (n) => dataSource.driver.createParameter(`p${n}`, n - 1);
}

export interface IdListCondition {
  sql: string;
  bind(ids: readonly string[]): unknown;
}

/** One statement text whatever the list's length; the primary-key index is used either way (query-plan tests). */
export function idListCondition(dataSource: DataSource, column: string, n: number): IdListCondition {
  const parameter = placeholders(dataSource)(n);
  if (dataSource.options.type === 'postgres') {
    return { sql: `${column} = ANY(${parameter}::uuid[])`, bind: (ids) => ids };
  }
  return { sql: `${column} IN (SELECT value FROM json_each(${parameter}))`, bind: (ids) => JSON.stringify(ids) };
}

export type RowReader = <Row>(sql: string, parameters: unknown[]) => Promise<Row[]>;

/** For the hot paths' reads (docs/adr/0010-data-access-repositories.md). */
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
