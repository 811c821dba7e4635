import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * The removals an organization's admins made (docs/adr/0044-one-member-lifecycle.md): a removed member has no
 * membership row (so every read of the members sees none), and a row here, which single sign-on's just-in-time
 * membership reads and never overrides. An admin adding the person again deletes it. A removal made before this
 * migration left no trace: nothing to carry over.
 */
export class MemberRemovals1765820000000 implements MigrationInterface {
  name = 'MemberRemovals1765820000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE member_removals (
        organization_id ${uuid} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        user_id ${uuid} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        removed_at ${timestamp} NOT NULL,
        PRIMARY KEY (organization_id, user_id)
      )`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE member_removals`);
  }
}
