import { randomUUID } from 'node:crypto';
import { MigrationInterface, QueryRunner } from 'typeorm';

/** A people issuer with an older one in its organization. */
interface LaterEntry {
  id: string;
  organization_id: string;
}

/**
 * An organization has one `people` issuer at most (docs/federation.md#trusted-issuers): single sign-on uses it, and
 * `trusted-issuer add` refuses a second. A partial unique index says it on both databases.
 *
 * A database made before may have an organization with several: the oldest stays (the one single sign-on already
 * used: first by created_at, then id), the others are removed, each recorded as `trusted_issuer.removed` with reason
 * `duplicate_people_issuer` and no actor, with their pending sign-ins. No workload identity names a people issuer. The
 * migration never stops on them; a database with one per organization is only given the index.
 */
export class OnePeopleIssuerPerOrganization1765710000000 implements MigrationInterface {
  name = 'OnePeopleIssuerPerOrganization1765710000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const postgres = queryRunner.connection.options.type === 'postgres';
    const arg = (n: number): string => (postgres ? `$${n}` : '?');
    const later = (await queryRunner.query(`
      SELECT t.id, t.organization_id FROM trusted_issuers t
      WHERE t.kind = 'people' AND EXISTS (SELECT 1 FROM trusted_issuers o
        WHERE o.organization_id = t.organization_id AND o.kind = 'people'
          AND (o.created_at < t.created_at OR (o.created_at = t.created_at AND o.id < t.id)))`)) as LaterEntry[];
    const occurredAt = new Date().toISOString();
    for (const entry of later) {
      await queryRunner.query(
        `INSERT INTO audit_events (id, occurred_at, action, organization_id, target_type, target_id, reason)
          VALUES (${arg(1)}, ${arg(2)}, 'trusted_issuer.removed', ${arg(3)}, 'trusted_issuer', ${arg(4)},
            'duplicate_people_issuer')`,
        [randomUUID(), occurredAt, entry.organization_id, entry.id],
      );
      // Said, not left to ON DELETE CASCADE: TypeORM runs SQLite's migrations with foreign keys off.
      await queryRunner.query(`DELETE FROM console_sso_requests WHERE trusted_issuer_id = ${arg(1)}`, [entry.id]);
      await queryRunner.query(`DELETE FROM trusted_issuers WHERE id = ${arg(1)}`, [entry.id]);
    }
    await queryRunner.query(
      `CREATE UNIQUE INDEX trusted_issuers_people_per_organization
        ON trusted_issuers (organization_id) WHERE kind = 'people'`,
    );
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX trusted_issuers_people_per_organization`);
  }
}
