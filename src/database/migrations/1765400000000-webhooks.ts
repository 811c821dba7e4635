import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * Signed webhooks (docs/webhooks.md, docs/adr/0037-signed-webhooks.md): an organization's endpoints, the events written
 * in each change's transaction (the outbox), and a delivery per event and endpoint. A delivery has no foreign key to
 * its webhook, so that a change still commits when the webhook was deleted meanwhile; the due ones are claimed from a
 * partial index.
 */
export class Webhooks1765400000000 implements MigrationInterface {
  name = 'Webhooks1765400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE webhooks (
        id ${uuid} PRIMARY KEY,
        organization_id ${uuid} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        url varchar(2048) NOT NULL,
        events integer NOT NULL,
        secret_encrypted text NOT NULL,
        created_at ${timestamp} NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX webhooks_org_newest ON webhooks (organization_id, created_at DESC, id DESC)`);
    await queryRunner.query(`
      CREATE TABLE webhook_events (
        id ${uuid} PRIMARY KEY,
        organization_id ${uuid} NOT NULL,
        event_type varchar(64) NOT NULL,
        payload text NOT NULL,
        dedupe_key varchar(128) NULL UNIQUE,
        occurred_at ${timestamp} NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX webhook_events_occurred ON webhook_events (occurred_at)`);
    await queryRunner.query(`
      CREATE TABLE webhook_deliveries (
        id ${uuid} PRIMARY KEY,
        webhook_id ${uuid} NOT NULL,
        event_id ${uuid} NOT NULL REFERENCES webhook_events (id) ON DELETE CASCADE,
        status varchar(16) NOT NULL CHECK (status IN ('pending', 'succeeded', 'failed')),
        attempts integer NOT NULL DEFAULT 0,
        next_attempt_at ${timestamp} NULL,
        claim ${uuid} NULL,
        last_attempt_at ${timestamp} NULL,
        last_response_status integer NULL,
        last_error varchar(200) NULL,
        created_at ${timestamp} NOT NULL
      )`);
    await queryRunner.query(
      `CREATE INDEX webhook_deliveries_due ON webhook_deliveries (next_attempt_at) WHERE status = 'pending'`,
    );
    await queryRunner.query(
      `CREATE INDEX webhook_deliveries_webhook_newest ON webhook_deliveries (webhook_id, created_at DESC, id DESC)`,
    );
    await queryRunner.query(`CREATE INDEX webhook_deliveries_event ON webhook_deliveries (event_id)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE webhook_deliveries`);
    await queryRunner.query(`DROP TABLE webhook_events`);
    await queryRunner.query(`DROP TABLE webhooks`);
  }
}
