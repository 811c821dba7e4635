import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * Webhook endpoints that keep failing are disabled (docs/webhooks.md#disabled-endpoints,
 * docs/adr/0045-fair-webhook-delivery.md): each endpoint counts its failed attempts in a row, and says since when it is
 * disabled. The pending deliveries of an endpoint are found by their own partial index, so that the outbox's bound
 * (the oldest dropped past WEBHOOK_MAX_PENDING_PER_ENDPOINT) reads only those.
 */
export class WebhookEndpointHealth1765830000000 implements MigrationInterface {
  name = 'WebhookEndpointHealth1765830000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`ALTER TABLE webhooks ADD COLUMN consecutive_failures integer NOT NULL DEFAULT 0`);
    await queryRunner.query(`ALTER TABLE webhooks ADD COLUMN disabled_at ${timestamp} NULL`);
    await queryRunner.query(
      `CREATE INDEX webhook_deliveries_webhook_pending ON webhook_deliveries (webhook_id, created_at)
        WHERE status = 'pending'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX webhook_deliveries_webhook_pending`);
    await queryRunner.query(`ALTER TABLE webhooks DROP COLUMN disabled_at`);
    await queryRunner.query(`ALTER TABLE webhooks DROP COLUMN consecutive_failures`);
  }
}
