import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * The people page of the console (docs/adr/0057-members-and-single-sign-on-in-the-console.md):
 * - `member_invitations`: an admin's one-time invitation, its code's SHA-256 alone stored, used once before
 *   `expires_at`; one pending invitation per person and organization (a new one replaces it);
 * - `memberships.last_signed_in_at`: the member's last console sign-in; null for those who have not signed in since.
 */
export class MemberInvitations1765900000000 implements MigrationInterface {
  name = 'MemberInvitations1765900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`ALTER TABLE memberships ADD COLUMN last_signed_in_at ${timestamp} NULL`);
    await queryRunner.query(`
      CREATE TABLE member_invitations (
        id ${uuid} PRIMARY KEY,
        organization_id ${uuid} NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
        user_id ${uuid} NOT NULL REFERENCES users (id) ON DELETE CASCADE,
        role varchar(16) NOT NULL,
        code_hash varchar(64) NOT NULL,
        invited_by_user_id ${uuid} NULL,
        created_at ${timestamp} NOT NULL,
        expires_at ${timestamp} NOT NULL,
        accepted_at ${timestamp} NULL
      )`);
    await queryRunner.query(`CREATE UNIQUE INDEX member_invitations_code ON member_invitations (code_hash)`);
    // One pending invitation per person: a new one deletes the last in the same transaction.
    await queryRunner.query(`CREATE UNIQUE INDEX member_invitations_pending
      ON member_invitations (organization_id, user_id) WHERE accepted_at IS NULL`);
    await queryRunner.query(`CREATE INDEX member_invitations_expiry ON member_invitations (expires_at)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TABLE member_invitations`);
    await queryRunner.query(`ALTER TABLE memberships DROP COLUMN last_signed_in_at`);
  }
}
