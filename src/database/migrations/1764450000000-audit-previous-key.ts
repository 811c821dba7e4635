import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/** api_key.rotated names the replaced key beside the new one (docs/api.md#audit-events). */
export class AuditPreviousKey1764450000000 implements MigrationInterface {
  name = 'AuditPreviousKey1764450000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid } = sqlTypes(queryRunner);
    await queryRunner.query(`ALTER TABLE audit_events ADD COLUMN previous_api_key_id ${uuid} NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE audit_events DROP COLUMN previous_api_key_id`);
  }
}
