import type { DataSource } from 'typeorm';

/** TypeORM's record of applied migrations (its default table name; data-source-options.ts keeps the default). */
const MIGRATIONS_TABLE = 'migrations';

/**
 * The migrations this build knows that the database has not applied: none once the start has migrated it (or a newer
 * instance has). One indexed read of a small table, for the readiness probe (docs/deployment.md#probes).
 */
export async function pendingMigrations(dataSource: DataSource): Promise<string[]> {
  const rows = await dataSource.query<Array<{ name: string }>>(`SELECT name FROM ${MIGRATIONS_TABLE}`);
  const applied = new Set(rows.map((row) => row.name));
  return dataSource.migrations
    .map((migration) => migration.name ?? migration.constructor.name)
    .filter((name) => !applied.has(name));
}
