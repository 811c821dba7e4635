import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/** The audit trail (issue: production readiness). No foreign keys: entries outlive what they name. */
export class AuditEvents1763900000000 implements MigrationInterface {
  name = 'AuditEvents1763900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE audit_events (
        id ${uuid} PRIMARY KEY,
        occurred_at ${timestamp} NOT NULL,
        action varchar(64) NOT NULL,
        organization_id ${uuid} NULL,
        actor_user_id ${uuid} NULL,
        actor_api_key_id ${uuid} NULL,
        target_type varchar(32) NULL,
        target_id ${uuid} NULL,
        reason varchar(64) NULL,
        client_ip varchar(64) NULL,
        request_id varchar(128) NULL
      )`);
    await queryRunner.query(`CREATE INDEX audit_events_org_time ON audit_events (organization_id, occurred_at DESC)`);
    await queryRunner.query(`CREATE INDEX audit_events_target ON audit_events (target_id)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE audit_events`);
  }
}
