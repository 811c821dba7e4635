import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * Refresh tokens as chains (docs/adr/0061-code-and-refresh-cost.md): `oauth_refresh_chains` keeps one row per chain,
 * begun by a code's redemption, with the SHA-256 of its current token; a refresh replaces that hash in place, and a
 * token of the chain that is not the current one is a reuse. Each refresh added a row to `oauth_refresh_tokens`, kept
 * until the grant ended (a grant refreshed every 15 minutes grew it by about 100 rows a day); that table is dropped
 * with its tokens: a client holding one is refused (`refresh_token_invalid`) and asks for a code again, which its
 * person's still-active grant allows without a question (docs/mcp.md#consent). Grants and codes are untouched.
 */
export class RefreshChains1765940000000 implements MigrationInterface {
  name = 'RefreshChains1765940000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE oauth_refresh_chains (
        id ${uuid} PRIMARY KEY,
        grant_id ${uuid} NOT NULL,
        token_hash varchar(64) NOT NULL,
        scope text NOT NULL,
        created_at ${timestamp} NOT NULL,
        refreshed_at ${timestamp}
      )`);
    await queryRunner.query(`CREATE INDEX oauth_refresh_chains_grant ON oauth_refresh_chains (grant_id)`);
    await queryRunner.query(`DROP TABLE oauth_refresh_tokens`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE oauth_refresh_tokens (
        token_hash varchar(64) PRIMARY KEY,
        grant_id ${uuid} NOT NULL,
        scope text NOT NULL,
        created_at ${timestamp} NOT NULL,
        used_at ${timestamp}
      )`);
    await queryRunner.query(`CREATE INDEX oauth_refresh_tokens_grant ON oauth_refresh_tokens (grant_id)`);
    await queryRunner.query(`DROP TABLE oauth_refresh_chains`);
  }
}
