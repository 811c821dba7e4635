import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * `id_token_uses` (docs/federation.md#people-id-tokens): one row per ID token a person exchanged for a session token,
 * kept until the token expires. `token_key` is the SHA-256 of the issuer with the token's `jti`, or with its signed
 * header and payload when it has none; its primary key is what decides, on any instance, that a token is used once.
 */
export class IdTokenUses1765810000000 implements MigrationInterface {
  name = 'IdTokenUses1765810000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE id_token_uses (
        token_key varchar(64) PRIMARY KEY,
        expires_at ${timestamp} NOT NULL
      )`);
    // The pruning of the tokens that have expired.
    await queryRunner.query(`CREATE INDEX id_token_uses_expiry ON id_token_uses (expires_at)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE id_token_uses`);
  }
}
