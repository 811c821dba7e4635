import { DynamicModule, Module } from '@nestjs/common';
import { TypeOrmModule } from '@nestjs/typeorm';
import { Client } from 'pg';
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
            return dataSourceOptions(config.database);
          },
        }),
      ],
    };
  }
}
