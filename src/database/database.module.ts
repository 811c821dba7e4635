import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Client } from 'pg';
import { DataSource, DataSourceOptions } from 'typeorm';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfiguration, DatabaseConfig } from '../config/configuration';
import { dataSourceOptions } from './data-source-options';
import { UnitOfWork } from './unit-of-work';

async function ensureSchema(database: DatabaseConfig): Promise<void> {
  if (database.type !== 'postgres' || database.schema === undefined) return;
  const client = new Client({ connectionString: database.url, connectionTimeoutMillis: database.connectTimeoutMs });
  await client.connect();
  try {
    await client.query(`CREATE SCHEMA IF NOT EXISTS "${database.schema}"`);
  } catch (error) {
    // 23505 unique_violation, 42P06 duplicate_schema: another instance created it meanwhile.
    const code = (error as { code?: unknown }).code;
    if (code !== '23505' && code !== '42P06') throw error;
  } finally {
    await client.end();
  }
}

/** Advisory lock key serialising migrations between instances; the second half is the schema name's hash. */
const MIGRATION_LOCK_CLASS = 0x67617465;
const MIGRATION_LOCK_POLL_MS = 100;

async function runMigrationsLocked(options: DataSourceOptions): Promise<void> {
  // Two connections: one holds the lock, the other runs the migrations.
  const extra: Record<string, unknown> = { ...(options.extra as object), max: 2, statement_timeout: 0 };
  delete extra.query_timeout;
  delete extra.idle_in_transaction_session_timeout;
  const dataSource = await new DataSource({ ...options, migrationsRun: false, extra }).initialize();
  const lock = dataSource.createQueryRunner();
  const lockArguments = 'hashtext(current_schema())::int4';
  try {
    await lock.connect();
    for (;;) {
      const rows = (await lock.query(`SELECT pg_try_advisory_lock($1::int4, ${lockArguments}) AS locked`, [
        MIGRATION_LOCK_CLASS,
      ])) as Array<{ locked: boolean }>;
      if (rows[0].locked) break;
      await new Promise((resolve) => setTimeout(resolve, MIGRATION_LOCK_POLL_MS));
    }
    try {
      await dataSource.runMigrations({ transaction: 'each' });
    } finally {
      await lock.query(`SELECT pg_advisory_unlock($1::int4, ${lockArguments})`, [MIGRATION_LOCK_CLASS]);
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
      // UnitOfWork is one per data source: on SQLite it queues every transaction of the process.
      global: true,
      providers: [UnitOfWork],
      exports: [UnitOfWork],
      imports: [
        TypeOrmModule.forRootAsync({
          inject: [APP_CONFIG],
          useFactory: async (config: AppConfiguration) => {
            await ensureSchema(config.database);
            // Each feature module registers its own entities (EntitiesModule).
            return { ...dataSourceOptions(config.database), migrationsRun: false, autoLoadEntities: true };
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
