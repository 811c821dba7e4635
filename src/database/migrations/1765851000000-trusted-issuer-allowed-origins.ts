import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `trusted_issuers.allowed_origins`: the origins besides the issuer's own where its discovery document may place its
 * key set and endpoints (`trusted-issuer add --allow-origin`, docs/federation.md#discovery), a JSON array as text like
 * `email_domains`. The entries added before have none: their endpoints must be on the issuer's origin from now on.
 */
export class TrustedIssuerAllowedOrigins1765851000000 implements MigrationInterface {
  name = 'TrustedIssuerAllowedOrigins1765851000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE trusted_issuers ADD COLUMN allowed_origins text NOT NULL DEFAULT '[]'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE trusted_issuers DROP COLUMN allowed_origins`);
  }
}
