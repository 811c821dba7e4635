import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * What the console shows of a delivery and the secret rotation's overlap (docs/webhooks.md#the-delivery-log,
 * docs/adr/0059-delivery-answers-secret-overlap-export.md):
 * - a delivery keeps its last attempt's answer: the time it took, a subset of its headers (JSON), the first 4 KiB of its
 *   body and whether there was more; and the delivery it resends, if any;
 * - an endpoint keeps its previous secret, sealed, while it still signs beside the new one (until
 *   previous_secret_expires_at);
 * - an audit entry says what a change changed (`changes`, JSON: each field's before and after, never a secret).
 * Every column is nullable or has a default: nothing is rewritten.
 */
export class WebhookDeliveryDetails1765920000000 implements MigrationInterface {
  name = 'WebhookDeliveryDetails1765920000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`ALTER TABLE webhooks ADD COLUMN previous_secret_encrypted text NULL`);
    await queryRunner.query(`ALTER TABLE webhooks ADD COLUMN previous_secret_expires_at ${timestamp} NULL`);
    await queryRunner.query(`ALTER TABLE webhook_deliveries ADD COLUMN resent_from ${uuid} NULL`);
    await queryRunner.query(`ALTER TABLE webhook_deliveries ADD COLUMN last_duration_ms integer NULL`);
    await queryRunner.query(`ALTER TABLE webhook_deliveries ADD COLUMN last_response_headers text NULL`);
    await queryRunner.query(`ALTER TABLE webhook_deliveries ADD COLUMN last_response_body text NULL`);
    await queryRunner.query(
      `ALTER TABLE webhook_deliveries ADD COLUMN last_response_truncated integer NOT NULL DEFAULT 0`,
    );
    await queryRunner.query(`ALTER TABLE audit_events ADD COLUMN changes text NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE audit_events DROP COLUMN changes`);
    for (const column of [
      'last_response_truncated',
      'last_response_body',
      'last_response_headers',
      'last_duration_ms',
      'resent_from',
    ]) {
      await queryRunner.query(`ALTER TABLE webhook_deliveries DROP COLUMN ${column}`);
    }
    await queryRunner.query(`ALTER TABLE webhooks DROP COLUMN previous_secret_expires_at`);
    await queryRunner.query(`ALTER TABLE webhooks DROP COLUMN previous_secret_encrypted`);
  }
}
