import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * What a key's owner may restrict (docs/api.md#allowlists-and-rate-limits, docs/adr/0040-key-policies-allowlists-and-rate-limits.md):
 * the client addresses it may be used from (normalized CIDRs, comma-separated; null: any) and a rate limit (null: none);
 * and the organization's policy that new keys carry an allowlist (0 for every existing organization). Nullable columns
 * and a constant default: no table rewrite.
 */
export class ApiKeyPolicies1765600000000 implements MigrationInterface {
  name = 'ApiKeyPolicies1765600000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE api_keys ADD COLUMN allowed_cidrs text NULL`);
    await queryRunner.query(`ALTER TABLE api_keys ADD COLUMN rate_limit_requests integer NULL`);
    await queryRunner.query(`ALTER TABLE api_keys ADD COLUMN rate_limit_window_seconds integer NULL`);
    await queryRunner.query(`ALTER TABLE organizations ADD COLUMN require_key_allowlist integer NOT NULL DEFAULT 0`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE organizations DROP COLUMN require_key_allowlist`);
    await queryRunner.query(`ALTER TABLE api_keys DROP COLUMN rate_limit_window_seconds`);
    await queryRunner.query(`ALTER TABLE api_keys DROP COLUMN rate_limit_requests`);
    await queryRunner.query(`ALTER TABLE api_keys DROP COLUMN allowed_cidrs`);
  }
}
