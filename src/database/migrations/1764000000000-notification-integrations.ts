import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/** Notification integrations with encrypted provider keys (docs/api.md#notification-integration-object). */
export class NotificationIntegrations1764000000000 implements MigrationInterface {
  name = 'NotificationIntegrations1764000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    // created_by has no foreign key on purpose: an integration belongs to the organization and
    // outlives the user who happened to create it.
    await queryRunner.query(`
      CREATE TABLE notification_integrations (
        id ${uuid} PRIMARY KEY,
        organization_id ${uuid} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        created_by ${uuid} NOT NULL,
        type varchar(32) NOT NULL CHECK (type IN ('monitoring')),
        name varchar(255) NOT NULL,
        site varchar(64) NOT NULL,
        api_key_last4 varchar(4) NOT NULL,
        application_key_last4 varchar(4) NOT NULL,
        api_key_encrypted text NOT NULL,
        application_key_encrypted text NOT NULL,
        validation text NOT NULL,
        created_at ${timestamp} NOT NULL,
        updated_at ${timestamp} NOT NULL
      )`);
    // The list endpoint: one organization's integrations, newest first.
    await queryRunner.query(
      `CREATE INDEX notification_integrations_org_newest
         ON notification_integrations (organization_id, created_at DESC, id DESC)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE notification_integrations`);
  }
}
