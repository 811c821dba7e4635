import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/** Organizations, users, memberships and user API keys (issue: the core service). */
export class CoreSchema1763700000000 implements MigrationInterface {
  name = 'CoreSchema1763700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE organizations (
        id ${uuid} PRIMARY KEY,
        name varchar(255) NOT NULL UNIQUE,
        access_token_lifetime integer NOT NULL DEFAULT 1800
          CHECK (access_token_lifetime BETWEEN 60 AND 86400),
        created_at ${timestamp} NOT NULL,
        updated_at ${timestamp} NOT NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE users (
        id ${uuid} PRIMARY KEY,
        email varchar(320) NOT NULL UNIQUE,
        created_at ${timestamp} NOT NULL
      )`);
    await queryRunner.query(`
      CREATE TABLE memberships (
        organization_id ${uuid} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        user_id ${uuid} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        role varchar(16) NOT NULL CHECK (role IN ('admin', 'member', 'viewer')),
        created_at ${timestamp} NOT NULL,
        updated_at ${timestamp} NOT NULL,
        PRIMARY KEY (organization_id, user_id)
      )`);
    await queryRunner.query(`CREATE INDEX memberships_user ON memberships (user_id)`);
    await queryRunner.query(`
      CREATE TABLE api_keys (
        id ${uuid} PRIMARY KEY,
        organization_id ${uuid} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        user_id ${uuid} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        label varchar(255) NOT NULL DEFAULT '',
        secret_hash varchar(64) NOT NULL,
        status varchar(16) NOT NULL CHECK (status IN ('ACTIVE', 'REVOKED')),
        created_at ${timestamp} NOT NULL,
        updated_at ${timestamp} NOT NULL,
        last_used_at ${timestamp} NULL,
        revoked_at ${timestamp} NULL
      )`);
    // The list endpoint: one owner's keys, newest first (docs/api.md).
    await queryRunner.query(
      `CREATE INDEX api_keys_owner_newest ON api_keys (user_id, organization_id, created_at DESC, id DESC)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE api_keys`);
    await queryRunner.query(`DROP TABLE memberships`);
    await queryRunner.query(`DROP TABLE users`);
    await queryRunner.query(`DROP TABLE organizations`);
  }
}
