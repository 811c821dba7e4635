import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Client } from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfiguration, DatabaseConfig } from '../config/configuration';
import { dataSourceOptions } from './data-source-options';

/** A configured PostgreSQL schema is created before the migrations run in it. */
async function ensureSchema(database: DatabaseConfig): Promise<void> {
  if (database.type !== 'postgres' || database.schema === undefined) return;
  const client = new Client({ connectionString: database.url, connectionTimeoutMillis: database.connectTimeoutMs });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${database.schema}"`);
  } finally {
    await client.end();
  }
}

/** Key of the PostgreSQL advisory lock that serialises migrations between instances (any constant). */
const MIGRATION_LOCK = 0x6761746568;

/**
 * Migrations run at start (DESIGN.md section 1). On PostgreSQL they run on connections of their own,
 * without the request statement and query timeouts (a migration may legitimately take longer than a
 * request), and under an advisory lock: instances started together wait for each other instead of
 * racing through the same migrations. TypeORM takes no such lock itself.
 */
async function runMigrationsLocked(options: DataSourceOptions): Promise<void> {
  // Two connections: one holds the lock, the other runs the migrations.
  const extra: Record<string, unknown> = { ...(options.extra as object), max: 2, statement_timeout: 0 };
  delete extra.query_timeout;
  delete extra.idle_in_transaction_session_timeout;
  const dataSource = await new DataSource({ ...options, migrationsRun: false, extra }).initialize();
  const lock = dataSource.createQueryRunner();
  try {
    await lock.connect();
    await lock.query('SELECT pg_advisory_lock($1)', [MIGRATION_LOCK]);
    try {
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await lock.query('SELECT pg_advisory_unlock($1)', [MIGRATION_LOCK]);
    }
  } finally {
    await lock.release();
    await dataSource.destroy();
  }
}

@Module({})
export class DatabaseModule {
  static forRoot(): DynamicModule {
    return {
      module: DatabaseModule,
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [APP_CONFIG],
          useFactory: async (config: AppConfiguration) => {
            await ensureSchema(config.database);
            return { ...dataSourceOptions(config.database), migrationsRun: false };
          },
          dataSourceFactory: async (options) => {
            // SQLite (one file, possibly `:memory:`) migrates on the app's own connection.
            if (options!.type !== 'postgres') return new DataSource({ ...options!, migrationsRun: true }).initialize();
            await runMigrationsLocked(options);
            return new DataSource(options).initialize();
          },
        }),
      ],
    };
  }
}
