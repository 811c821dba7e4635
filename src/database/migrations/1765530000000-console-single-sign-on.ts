import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * Console single sign-on (docs/console.md#single-sign-on, docs/adr/0039-console-single-sign-on.md):
 * - `console_sso_requests`, one row per sign-in started at the organization's identity provider: the SHA-256 of its
 *   `state` (the key the callback finds it by), of the browser-binding cookie, and the `nonce` and PKCE
 *   `code_verifier` the callback needs. Used once, on any instance: the UPDATE that consumes it is the only check.
 * - `console_sign_in_links.sign_in_reason`: what the link's `console.signed_in` records as its reason (null for an
 *   administrator's link, `sso:<trusted issuer id>` for a sign-in through single sign-on).
 */
export class ConsoleSingleSignOn1765530000000 implements MigrationInterface {
  name = 'ConsoleSingleSignOn1765530000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE console_sso_requests (
        id ${uuid} PRIMARY KEY,
        state_hash varchar(64) NOT NULL UNIQUE,
        binding_hash varchar(64) NOT NULL,
        organization_id ${uuid} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        trusted_issuer_id ${uuid} NOT NULL REFERENCES trusted_issuers (id) ON DELETE CASCADE,
        nonce varchar(64) NOT NULL,
        code_verifier varchar(128) NOT NULL,
        created_at ${timestamp} NOT NULL,
        expires_at ${timestamp} NOT NULL,
        used_at ${timestamp} NULL
      )`);
    // Pruning of requests long expired, at each new one.
    await queryRunner.query(`CREATE INDEX console_sso_requests_expiry ON console_sso_requests (expires_at)`);
    await queryRunner.query(`ALTER TABLE console_sign_in_links ADD COLUMN sign_in_reason varchar(64) NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE console_sign_in_links DROP COLUMN sign_in_reason`);
    await queryRunner.query(`DROP TABLE console_sso_requests`);
  }
}
