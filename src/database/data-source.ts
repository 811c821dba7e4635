import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { loadConfiguration } from '../config/configuration';
import { dataSourceOptions } from './data-source-options';

/**
 * For the TypeORM CLI, from the server's configuration; ormconfig.ts re-exports it. The entities are found by their
 * file names (`*.entity.js` in dist/, `*.entity.ts` from the sources), so that database/ imports no feature module.
 */
export const ENTITY_FILES = join(__dirname, '..', '**', '*.entity.{js,ts}');

export default new DataSource({
  ...dataSourceOptions(loadConfiguration(process.env).database, { entities: [ENTITY_FILES] }),
  migrationsRun: false,
});
