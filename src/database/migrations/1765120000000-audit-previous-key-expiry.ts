import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/** api_key.rotated with a grace period keeps the old key's new expiry, which the revocation feed reports. */
export class AuditPreviousKeyExpiry1765120000000 implements MigrationInterface {
  name = 'AuditPreviousKeyExpiry1765120000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`ALTER TABLE audit_events ADD COLUMN previous_api_key_expires_at ${timestamp} NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE audit_events DROP COLUMN previous_api_key_expires_at`);
  }
}
