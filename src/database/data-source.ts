import { DataSource } from 'typeorm';
import { loadConfiguration } from '../config/configuration';
import { dataSourceOptions } from './data-source-options';

/** For the TypeORM CLI, from the server's configuration; ormconfig.ts re-exports it. */
export default new DataSource({ ...dataSourceOptions(loadConfiguration(process.env).database), migrationsRun: false });
