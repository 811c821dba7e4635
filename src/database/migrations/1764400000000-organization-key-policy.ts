import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The organization's key policy (docs/api.md#organization-settings): the longest lifetime, in days,
 * of a key created in the organization; null (every existing organization) sets no limit.
 */
export class OrganizationKeyPolicy1764400000000 implements MigrationInterface {
  name = 'OrganizationKeyPolicy1764400000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE organizations ADD COLUMN max_key_lifetime_days integer NULL`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE organizations DROP COLUMN max_key_lifetime_days`);
  }
}
