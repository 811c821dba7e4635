import type { DataSource } from 'typeorm';
import { DATABASE_KIND } from './test-app';

/**
 * The plan the database would use for `sql`, one line per step: SQLite's EXPLAIN QUERY PLAN, or
 * PostgreSQL's EXPLAIN with the scans in `forbid` turned off. Tiny test tables would make those the
 * cheapest plan; forbidding them shows a plan that cannot use (or read in order) an index.
 */
export async function explain(
  dataSource: DataSource,
  sql: string,
  parameters: unknown[],
  forbid: ReadonlyArray<'seqscan' | 'bitmapscan'> = ['seqscan'],
): Promise<string> {
  const plan =
    DATABASE_KIND === 'sqlite'
      ? (await dataSource.query<Array<{ detail: string }>>(`EXPLAIN QUERY PLAN ${sql}`, parameters)).map(
          (row) => row.detail,
        )
      : await dataSource.transaction(async (manager) => {
          for (const scan of forbid) await manager.query(`SET LOCAL enable_${scan} = off`);
          const rows = await manager.query<Array<{ 'QUERY PLAN': string }>>(`EXPLAIN ${sql}`, parameters);
          return rows.map((row) => row['QUERY PLAN']);
        });
  return plan.join('\n');
}
