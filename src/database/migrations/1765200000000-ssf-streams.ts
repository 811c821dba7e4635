import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * Instance streams (docs/adr/0031-revocation-feed-in-production.md): a resource server's verifier instances each get a
 * stream of their own. A delivery's stream is now a resource server (its default stream) or an instance stream, so
 * ssf_deliveries loses its foreign key to resource_servers: the table is rebuilt, as SQLite cannot drop a constraint.
 * Deliveries of a stream that no longer exists are deleted by the retention job.
 */
export class SsfStreams1765200000000 implements MigrationInterface {
  name = 'SsfStreams1765200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE ssf_streams (
        id ${uuid} PRIMARY KEY,
        resource_server_id ${uuid} NOT NULL REFERENCES resource_servers (id) ON DELETE CASCADE,
        description varchar(200) NULL,
        created_at ${timestamp} NOT NULL,
        last_polled_at ${timestamp} NOT NULL
      )`);
    await queryRunner.query(`CREATE INDEX ssf_streams_resource_server ON ssf_streams (resource_server_id)`);
    await queryRunner.query(`CREATE INDEX ssf_streams_last_polled ON ssf_streams (last_polled_at)`);
    await rebuildDeliveries(queryRunner, '');
    // A deleted stream's deliveries are deleted by stream, acknowledged ones included.
    await queryRunner.query(`CREATE INDEX ssf_deliveries_stream ON ssf_deliveries (stream_id)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DELETE FROM ssf_deliveries WHERE stream_id NOT IN (SELECT id FROM resource_servers)`);
    await rebuildDeliveries(queryRunner, 'REFERENCES resource_servers (id) ON DELETE CASCADE');
    await queryRunner.query(`DROP TABLE ssf_streams`);
  }
}

/** ssf_deliveries again, with `streamReference` on stream_id: create, copy, drop, rename, then the indexes. */
async function rebuildDeliveries(queryRunner: QueryRunner, streamReference: string): Promise<void> {
  const { uuid, timestamp } = sqlTypes(queryRunner);
  const postgres = queryRunner.connection.options.type === 'postgres';
  await queryRunner.query(`
    CREATE TABLE ssf_deliveries_rebuilt (
      id ${uuid} PRIMARY KEY,
      stream_id ${uuid} NOT NULL ${streamReference},
      event_id ${uuid} NOT NULL REFERENCES ssf_events (id) ON DELETE CASCADE,
      created_at ${timestamp} NOT NULL,
      acknowledged_at ${timestamp} NULL,
      error text NULL
    )`);
  await queryRunner.query(`
    INSERT INTO ssf_deliveries_rebuilt (id, stream_id, event_id, created_at, acknowledged_at, error)
    SELECT id, stream_id, event_id, created_at, acknowledged_at, error FROM ssf_deliveries`);
  await queryRunner.query(`DROP TABLE ssf_deliveries`);
  await queryRunner.query(`ALTER TABLE ssf_deliveries_rebuilt RENAME TO ssf_deliveries`);
  if (postgres) {
    // PostgreSQL names constraints after the table they were made on: the names the first migration gave.
    await queryRunner.query(`ALTER INDEX ssf_deliveries_rebuilt_pkey RENAME TO ssf_deliveries_pkey`);
    const rename = (from: string, to: string) =>
      queryRunner.query(`ALTER TABLE ssf_deliveries RENAME CONSTRAINT ${from} TO ${to}`);
    await rename('ssf_deliveries_rebuilt_event_id_fkey', 'ssf_deliveries_event_id_fkey');
    if (streamReference !== '') {
      await rename('ssf_deliveries_rebuilt_stream_id_fkey', 'ssf_deliveries_stream_id_fkey');
    }
  }
  await queryRunner.query(
    `CREATE INDEX ssf_deliveries_pending ON ssf_deliveries (stream_id, created_at, id) WHERE acknowledged_at IS NULL`,
  );
  await queryRunner.query(`CREATE INDEX ssf_deliveries_event ON ssf_deliveries (event_id)`);
  await queryRunner.query(`CREATE INDEX ssf_deliveries_created ON ssf_deliveries (created_at)`);
}
