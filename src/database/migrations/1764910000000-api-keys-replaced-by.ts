import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/** The key a rotation replaced this one by (docs/api.md#api-key-object); nullable, no default: no rewrite. */
export class ApiKeysReplacedBy1764910000000 implements MigrationInterface {
  name = 'ApiKeysReplacedBy1764910000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid } = sqlTypes(queryRunner);
    await queryRunner.query(`ALTER TABLE api_keys ADD COLUMN replaced_by ${uuid} NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE api_keys DROP COLUMN replaced_by`);
  }
}
