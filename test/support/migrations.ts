import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { loadConfiguration } from '../../src/config/configuration';
import { dataSourceOptions, MIGRATIONS } from '../../src/database/data-source-options';
import { createTestApp, POSTGRES_URL, TestApp, TestDatabase, testEnvironment } from './test-app';

/** The app on `database` after `seed` wrote rows at the schema before `migration`: it runs that migration at start. */
export async function migratedApp(
  database: TestDatabase,
  migration: (typeof MIGRATIONS)[number],
  seed: (old: DataSource) => Promise<void>,
): Promise<TestApp> {
  if (!MIGRATIONS.includes(migration)) throw new Error(`${migration.name} is not in MIGRATIONS`);
  const config = loadConfiguration(testEnvironment(database));
  if (POSTGRES_URL !== undefined) {
    const client = new Client({ connectionString: POSTGRES_URL });
    await client.connect();
    await client.query(`CREATE SCHEMA "${config.database.type === 'postgres' ? config.database.schema : ''}"`);
    await client.end();
  }
  const before = MIGRATIONS.slice(0, MIGRATIONS.indexOf(migration));
  const old = await new DataSource(dataSourceOptions(config.database, { migrations: before })).initialize();
  try {
    await seed(old);
  } finally {
    await old.destroy();
  }
  return createTestApp({ database });
}
