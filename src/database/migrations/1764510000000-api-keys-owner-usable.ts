import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The creation cap counts an owner's usable keys: ACTIVE and not expired
 * (docs/api.md#post-v1user-api-keys). Expired keys stay ACTIVE in the table until revoked, and an
 * owner may have any number of them (a rotation with a grace period leaves one each time), so the
 * count must not read them: this partial index holds the ACTIVE keys by owner and expiry, and the
 * count reads two ranges of it, the keys without an expiry and those expiring after now, each
 * stopping at the cap. `id` is in it so that a rotation can leave the key it replaces out of the
 * count without reading the table.
 *
 * Outside a transaction, so that PostgreSQL can build it CONCURRENTLY (see 1764300000000). An index
 * left invalid by a build that failed half-way is dropped first, so that running it again repairs it.
 */
export class ApiKeysOwnerUsable1764510000000 implements MigrationInterface {
  name = 'ApiKeysOwnerUsable1764510000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    const index = `api_keys_owner_usable ON api_keys (user_id, organization_id, expires_at, id) WHERE status = 'ACTIVE'`;
    if (queryRunner.connection.options.type === 'postgres') {
      await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS api_keys_owner_usable`);
      await queryRunner.query(`CREATE INDEX CONCURRENTLY ${index}`);
    } else {
      await queryRunner.query(`CREATE INDEX ${index}`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX api_keys_owner_usable`);
  }
}
