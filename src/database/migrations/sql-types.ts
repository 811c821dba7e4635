import { QueryRunner } from 'typeorm';

/**
 * Column types that differ between the two databases. Migrations are plain SQL otherwise, so that
 * what runs is what is reviewed. Entities see the same values on both (src/database/columns.ts).
 */
export function sqlTypes(queryRunner: QueryRunner): { uuid: string; timestamp: string; json: string } {
  return queryRunner.connection.options.type === 'postgres'
    ? { uuid: 'uuid', timestamp: 'timestamptz', json: 'jsonb' }
    : { uuid: 'varchar(36)', timestamp: 'varchar(32)', json: 'text' };
}
