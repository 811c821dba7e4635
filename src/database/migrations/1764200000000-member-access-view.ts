import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The view `member_access` (src/identity/member-access.ts): identity's published read of a
 * membership with its organization's token lifetime, which the api-keys repository joins on its
 * hot path instead of splicing identity's tables into its own SQL.
 *
 * The lifetime is a scalar subquery, not a join: SQLite flattens a view that reads one table into a
 * LEFT JOIN (primary-key lookups only), but materializes a view that is itself a join, which would
 * scan every membership on every key lookup. PostgreSQL inlines it either way.
 */
export class MemberAccessView1764200000000 implements MigrationInterface {
  name = 'MemberAccessView1764200000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE VIEW member_access AS
      SELECT m.organization_id, m.user_id, m.role,
        (SELECT o.access_token_lifetime FROM organizations o WHERE o.id = m.organization_id) AS access_token_lifetime
      FROM memberships m`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query('DROP VIEW member_access');
  }
}
