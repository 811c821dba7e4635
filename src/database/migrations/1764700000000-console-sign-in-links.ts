import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * One-time sign-in links of the web console (docs/api.md#post-v1consolesessions): only a SHA-256
 * hash of the code is stored, with the member it signs in, its expiry and when it was used. A link
 * is used at most once, across every instance: the UPDATE that consumes it is the only check.
 */
export class ConsoleSignInLinks1764700000000 implements MigrationInterface {
  name = 'ConsoleSignInLinks1764700000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE console_sign_in_links (
        id ${uuid} PRIMARY KEY,
        code_hash varchar(64) NOT NULL UNIQUE,
        organization_id ${uuid} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        user_id ${uuid} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        created_at ${timestamp} NOT NULL,
        expires_at ${timestamp} NOT NULL,
        used_at ${timestamp} NULL
      )`);
    // Pruning of links long expired, at each new link.
    await queryRunner.query(`CREATE INDEX console_sign_in_links_expiry ON console_sign_in_links (expires_at)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE console_sign_in_links`);
  }
}
