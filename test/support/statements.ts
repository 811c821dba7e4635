import type { Pool } from 'pg';
import type { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';

/**
 * What the background writers send on their own timers (usage fields, audit batches, outboxes): never a request's.
 * A statement counted while a request runs is the request's unless it is one of these.
 */
const BACKGROUND = /last_used_at = u\.at|audit_events|ssf_|webhook|credential_usage/;

/**
 * Every SQL statement sent while `work` runs, in order, whitespace collapsed: through TypeORM's query runners (BEGIN
 * and COMMIT included: its logger sees each) and, on PostgreSQL, the pool's own reads, which pass TypeORM by
 * (docs/adr/0010-data-access-repositories.md). Background writers' statements are left out (BACKGROUND).
 */
export async function statementsDuring(dataSource: DataSource, work: () => Promise<unknown>): Promise<string[]> {
  const statements: string[] = [];
  const keep = (text: string): void => {
    const statement = text.replace(/\s+/g, ' ').trim();
    if (!BACKGROUND.test(statement)) statements.push(statement);
  };
  const logged = jest.spyOn(dataSource.logger, 'logQuery').mockImplementation((query: string) => keep(query));
  const pool = dataSource.options.type === 'postgres' ? ((dataSource.driver as PostgresDriver).master as Pool) : null;
  const query = pool?.query;
  if (pool !== null && query !== undefined) {
    pool.query = ((...args: unknown[]) => {
      // A text, or a named prepared statement's config ({ name, text, values }).
      const first = args[0];
      keep(typeof first === 'object' && first !== null && 'text' in first ? String(first.text) : String(first));
      return (query as (...all: unknown[]) => unknown).apply(pool, args);
    }) as Pool['query'];
  }
  try {
    await work();
  } finally {
    logged.mockRestore();
    if (pool !== null && query !== undefined) pool.query = query;
  }
  return statements;
}
