import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * Workload identities (docs/workload-identities.md): keys without secrets, matched against the tokens of a trusted
 * issuer of kind `workloads` by `sub` and exact conditions. `trusted_issuer_id` has no foreign key: removing a trusted
 * issuer leaves its identities in place, and their tokens are refused at the verifier (docs/adr/0038-workload-identities.md).
 */
export class WorkloadIdentities1765520000000 implements MigrationInterface {
  name = 'WorkloadIdentities1765520000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE workload_identities (
        id ${uuid} PRIMARY KEY,
        organization_id ${uuid} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        user_id ${uuid} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        trusted_issuer_id ${uuid} NOT NULL,
        issuer varchar(255) NOT NULL,
        label varchar(255) NOT NULL,
        subject varchar(1024) NOT NULL,
        conditions text NOT NULL,
        status varchar(16) NOT NULL CHECK (status IN ('ACTIVE', 'REVOKED')),
        scopes integer NOT NULL,
        expires_at ${timestamp} NULL,
        created_at ${timestamp} NOT NULL,
        updated_at ${timestamp} NOT NULL,
        last_used_at ${timestamp} NULL,
        last_used_ip varchar(45) NULL,
        revoked_at ${timestamp} NULL
      )`);
    // The token exchange: the ACTIVE identities of the token's trusted issuers with its exact `sub`.
    await queryRunner.query(
      `CREATE INDEX workload_identities_match ON workload_identities (trusted_issuer_id, subject) WHERE status = 'ACTIVE'`,
    );
    // One owner's list, newest first (and the owner's count under the cap); the organization's list.
    await queryRunner.query(
      `CREATE INDEX workload_identities_owner_newest
        ON workload_identities (user_id, organization_id, created_at DESC, id DESC)`,
    );
    await queryRunner.query(
      `CREATE INDEX workload_identities_org_newest ON workload_identities (organization_id, created_at DESC, id DESC)`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE workload_identities`);
  }
}
