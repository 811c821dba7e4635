import type { DataSource } from 'typeorm';

/**
 * Raw SQL in a repository is written once, at construction, with the driver's own placeholders
 * (TypeORM's `Driver.createParameter`): `$n` on PostgreSQL, `?` on SQLite. Each placeholder is
 * used once, in order. The text then never changes, so the driver prepares it once (SQLite's
 * statement cache) and the hot paths build no query per request.
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
 * One statement text whatever the list's length: PostgreSQL `= ANY($n::uuid[])` with an array,
 * SQLite `IN (SELECT value FROM json_each(?))` with a JSON array (the primary-key index is used
 * either way: the repositories' query-plan tests check it).
 */
export function idListCondition(dataSource: DataSource, column: string, n: number): IdListCondition {
  const parameter = placeholders(dataSource)(n);
  if (dataSource.options.type === 'postgres') {
    return { sql: `${column} = ANY(${parameter}::uuid[])`, bind: (ids) => ids };
  }
  return { sql: `${column} IN (SELECT value FROM json_each(${parameter}))`, bind: (ids) => JSON.stringify(ids) };
}
