import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * Usage over time (docs/api.md#usage-over-time, docs/adr/0058-usage-over-time.md): each credential's successful and
 * refused uses per channel, per minute in `credential_usage_minutes` and per hour in `credential_usage_hours` (the same
 * counts rolled up as they are written, for the hourly and daily charts and the organization's busiest credentials).
 * `minute` is the period's first minute in whole minutes since the Unix epoch (UTC): buckets are integer divisions on
 * both databases. Both are kept 30 days.
 */
export class CredentialUsage1765910000000 implements MigrationInterface {
  name = 'CredentialUsage1765910000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid } = sqlTypes(queryRunner);
    for (const table of ['credential_usage_minutes', 'credential_usage_hours']) {
      await queryRunner.query(`
        CREATE TABLE ${table} (
          credential_id ${uuid} NOT NULL,
          minute integer NOT NULL,
          channel varchar(16) NOT NULL,
          credential_kind varchar(32) NOT NULL,
          organization_id ${uuid} NOT NULL,
          succeeded integer NOT NULL,
          refused integer NOT NULL,
          PRIMARY KEY (credential_id, minute, channel)
        )`);
      // The organization's busiest credentials in a time range.
      await queryRunner.query(`CREATE INDEX ${table}_organization ON ${table} (organization_id, minute)`);
      // The retention's deletes, oldest first.
      await queryRunner.query(`CREATE INDEX ${table}_minute ON ${table} (minute)`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE credential_usage_hours`);
    await queryRunner.query(`DROP TABLE credential_usage_minutes`);
  }
}
