import { DataSource } from 'typeorm';
import { loadConfiguration } from '../config/configuration';
import { dataSourceOptions } from './data-source-options';

/**
 * The data source for the TypeORM CLI (`npm run typeorm -- migration:show`), built from the same
 * configuration as the server. ormconfig.ts re-exports it for tools that load TypeScript.
 */
export default new DataSource({ ...dataSourceOptions(loadConfiguration(process.env).database), migrationsRun: false });
