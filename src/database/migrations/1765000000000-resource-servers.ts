import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/** Resource servers (docs/resource-servers.md): the audience is unique; only an HMAC of the client secret is kept. */
export class ResourceServers1765000000000 implements MigrationInterface {
  name = 'ResourceServers1765000000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE resource_servers (
        id ${uuid} PRIMARY KEY,
        name varchar(255) NOT NULL,
        audience varchar(255) NOT NULL UNIQUE,
        secret_hash varchar(64) NOT NULL,
        created_at ${timestamp} NOT NULL,
        secret_rotated_at ${timestamp} NOT NULL
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE resource_servers`);
  }
}
