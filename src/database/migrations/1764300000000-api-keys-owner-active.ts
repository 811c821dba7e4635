import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * GET /v1/user-api-keys without include_revoked lists an owner's ACTIVE keys newest first. Neither
 * index had them in that order: api_keys_owner_newest walks every key of the owner, revoked ones
 * too, to find the active ones (an owner with 100,000 revoked keys and one active key read all
 * 100,000 for each page), and api_keys_owner_status had them unordered. This partial index holds the
 * ACTIVE keys only, in list order: the page and the count read what they return and nothing else,
 * and the creation cap counts from it (docs/api.md#post-v1user-api-keys). It replaces
 * api_keys_owner_status, whose one use (counting the active keys) it serves as well.
 *
 * Outside a transaction, so that PostgreSQL can build it CONCURRENTLY (see 1764100000000). An index
 * left invalid by a build that failed half-way is dropped first, so that running it again repairs it.
 */
export class ApiKeysOwnerActive1764300000000 implements MigrationInterface {
  name = 'ApiKeysOwnerActive1764300000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    const index = `api_keys_owner_active ON api_keys (user_id, organization_id, created_at DESC, id DESC)
      WHERE status = 'ACTIVE'`;
    if (queryRunner.connection.options.type === 'postgres') {
      await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS api_keys_owner_active`);
      await queryRunner.query(`CREATE INDEX CONCURRENTLY ${index}`);
      await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS api_keys_owner_status`);
    } else {
      await queryRunner.query(`CREATE INDEX ${index}`);
      await queryRunner.query(`DROP INDEX IF EXISTS api_keys_owner_status`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`CREATE INDEX api_keys_owner_status ON api_keys (user_id, organization_id, status)`);
    await queryRunner.query(`DROP INDEX api_keys_owner_active`);
  }
}
