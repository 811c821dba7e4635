import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * A member's session tokens issued before `sessions_valid_after` are refused (sign-out; see
 * docs/api.md#access-and-session-tokens). Nullable without a default: PostgreSQL adds it without a rewrite.
 */
export class MembershipSessionsValidAfter1764900000000 implements MigrationInterface {
  name = 'MembershipSessionsValidAfter1764900000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`ALTER TABLE memberships ADD COLUMN sessions_valid_after ${timestamp} NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE memberships DROP COLUMN sessions_valid_after`);
  }
}
