import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * Trusted issuers (docs/federation.md#trusted-issuers): unique per (organization, issuer, kind), and an issuer of kind
 * `people` serves one organization (a partial unique index). The client secret is stored encrypted.
 */
export class TrustedIssuers1765310000000 implements MigrationInterface {
  name = 'TrustedIssuers1765310000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE trusted_issuers (
        id ${uuid} PRIMARY KEY,
        organization_id ${uuid} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        issuer varchar(255) NOT NULL,
        kind varchar(16) NOT NULL CHECK (kind IN ('people', 'workloads')),
        audience varchar(255) NOT NULL,
        client_id varchar(255) NULL,
        client_secret_encrypted text NULL,
        token_endpoint_auth varchar(32) NULL
          CHECK (token_endpoint_auth IN ('client_secret_basic', 'client_secret_post')),
        email_domains text NOT NULL,
        jit_role varchar(16) NULL CHECK (jit_role IN ('admin', 'member', 'viewer')),
        created_at ${timestamp} NOT NULL,
        UNIQUE (organization_id, issuer, kind)
      )`);
    // A token's `iss` finds its entries (the token exchange); the unique constraint leads with the organization.
    await queryRunner.query(`CREATE INDEX trusted_issuers_issuer ON trusted_issuers (issuer, kind)`);
    await queryRunner.query(
      `CREATE UNIQUE INDEX trusted_issuers_people_one_organization ON trusted_issuers (issuer) WHERE kind = 'people'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE trusted_issuers`);
  }
}
