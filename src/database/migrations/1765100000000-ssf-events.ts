import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * The revocation feed's outbox (docs/revocation-feed.md): an event per change, and a delivery per event and stream
 * (resource server) until it is acknowledged; the pending ones of a stream are read in order from a partial index.
 */
export class SsfEvents1765100000000 implements MigrationInterface {
  name = 'SsfEvents1765100000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE ssf_events (
        id ${uuid} PRIMARY KEY,
        event_type varchar(128) NOT NULL,
        subject text NOT NULL,
        payload text NOT NULL,
        occurred_at ${timestamp} NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX ssf_events_occurred ON ssf_events (occurred_at)`);
    await queryRunner.query(`
      CREATE TABLE ssf_deliveries (
        id ${uuid} PRIMARY KEY,
        stream_id ${uuid} NOT NULL REFERENCES resource_servers (id) ON DELETE CASCADE,
        event_id ${uuid} NOT NULL REFERENCES ssf_events (id) ON DELETE CASCADE,
        created_at ${timestamp} NOT NULL,
        acknowledged_at ${timestamp} NULL,
        error text NULL
      )`);
    await queryRunner.query(
      `CREATE INDEX ssf_deliveries_pending ON ssf_deliveries (stream_id, created_at, id) WHERE acknowledged_at IS NULL`,
    );
    await queryRunner.query(`CREATE INDEX ssf_deliveries_event ON ssf_deliveries (event_id)`);
    await queryRunner.query(`CREATE INDEX ssf_deliveries_created ON ssf_deliveries (created_at)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE ssf_deliveries`);
    await queryRunner.query(`DROP TABLE ssf_events`);
  }
}
