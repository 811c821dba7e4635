import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * The authorization code grant (docs/mcp.md, docs/adr/0053-mcp-authorization-server.md): `oauth_grants`, one row per
 * person's consent to a client for a resource server (its scopes, status, last use); `oauth_codes`, the one-use codes
 * (their SHA-256 only, bound to client, redirect URI, PKCE challenge and resource); `oauth_refresh_tokens`, the
 * refresh tokens (their SHA-256 only), a used one kept until the grant ends so that its reuse is recognised.
 */
export class OAuthGrants1765860000000 implements MigrationInterface {
  name = 'OAuthGrants1765860000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE oauth_grants (
        id ${uuid} PRIMARY KEY,
        organization_id ${uuid} NOT NULL,
        user_id ${uuid} NOT NULL,
        client_id varchar(512) NOT NULL,
        client_name varchar(255) NOT NULL,
        resource varchar(255) NOT NULL,
        scope text NOT NULL,
        status varchar(16) NOT NULL,
        created_at ${timestamp} NOT NULL,
        last_used_at ${timestamp},
        revoked_at ${timestamp}
      )`);
    // A person's grants (GET /v1/grants, the remembered consent) and an organization's (the admins' view).
    await queryRunner.query(`CREATE INDEX oauth_grants_owner ON oauth_grants (organization_id, user_id, created_at)`);
    await queryRunner.query(`
      CREATE TABLE oauth_codes (
        code_hash varchar(64) PRIMARY KEY,
        grant_id ${uuid} NOT NULL,
        client_id varchar(512) NOT NULL,
        redirect_uri varchar(2048) NOT NULL,
        code_challenge varchar(128) NOT NULL,
        resource varchar(255) NOT NULL,
        scope text NOT NULL,
        expires_at ${timestamp} NOT NULL,
        used_at ${timestamp}
      )`);
    await queryRunner.query(`CREATE INDEX oauth_codes_expiry ON oauth_codes (expires_at)`);
    await queryRunner.query(`
      CREATE TABLE oauth_refresh_tokens (
        token_hash varchar(64) PRIMARY KEY,
        grant_id ${uuid} NOT NULL,
        scope text NOT NULL,
        created_at ${timestamp} NOT NULL,
        used_at ${timestamp}
      )`);
    await queryRunner.query(`CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE oauth_refresh_tokens`);
    await queryRunner.query(`DROP TABLE oauth_codes`);
    await queryRunner.query(`DROP TABLE oauth_grants`);
  }
}
