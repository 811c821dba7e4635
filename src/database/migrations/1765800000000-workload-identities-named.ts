import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * How an exchange may reach a workload identity (docs/workload-identities.md#naming-the-identity,
 * docs/adr/0043-workload-identities-named-by-client-id.md): `client_id` (by its id only, every identity created from now
 * on) or `subject` (also by its issuer and `sub` alone, as every identity could until now). The identities that exist
 * keep being matched as before, so no workload breaks; except the ACTIVE ones whose issuer and subject an ACTIVE
 * identity of another organization also has: while both are usable every exchange of that `sub` was already refused
 * as ambiguous, and when one is not the token goes to the other organization, so they are reached by their id only.
 */
export class WorkloadIdentitiesNamed1765800000000 implements MigrationInterface {
  name = 'WorkloadIdentitiesNamed1765800000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE workload_identities
      ADD COLUMN reachable_by varchar(16) NOT NULL DEFAULT 'subject' CHECK (reachable_by IN ('client_id', 'subject'))`);
    await queryRunner.query(`UPDATE workload_identities SET reachable_by = 'client_id'
      WHERE status = 'ACTIVE' AND EXISTS (SELECT 1 FROM workload_identities other
        WHERE other.status = 'ACTIVE' AND other.issuer = workload_identities.issuer
          AND other.subject = workload_identities.subject
          AND other.organization_id <> workload_identities.organization_id)`);
    // The existing rows took the default; every insert names its value (SQLite cannot drop a column's default).
    if (queryRunner.connection.options.type === 'postgres') {
      await queryRunner.query(`ALTER TABLE workload_identities ALTER COLUMN reachable_by DROP DEFAULT`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE workload_identities DROP COLUMN reachable_by`);
  }
}
