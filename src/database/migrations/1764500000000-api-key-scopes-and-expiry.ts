import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * Key scopes and expiry (docs/api.md#scopes, docs/api.md#expiry-and-key-policy).
 *
 * `scopes` is the permission bit mask of docs/adr/0017-key-scopes-as-a-permission-bit-mask.md. The
 * bits are written out here, as they were when this migration was written, and never read from the
 * code (which may gain permissions later):
 *   api_keys:create 1, api_keys:read 2, api_keys:revoke 4, api_keys:manage 8, audit:read 16,
 *   integrations:read 32, integrations:write 64, organization:write 128.
 *
 * Every existing key keeps working: it gets no expiry, and as scopes the default a key created now
 * would get from its owner's role in the key's organization (api_keys:read, audit:read,
 * integrations:read and integrations:write, as far as the role has them):
 *   admin 2|16|32|64 = 114, member and viewer 2|32 = 34.
 * A key whose owner is no longer a member of its organization gets no scope (0): it can still
 * identify its owner if they are added back, and nothing more until they create a new key.
 *
 * On PostgreSQL the column's default (needed to add a NOT NULL column) is dropped afterwards: an
 * insert that does not name the scopes (an instance of the previous version during a rolling
 * deployment) fails instead of storing a key that silently has none. SQLite cannot drop a default
 * without rebuilding the table, and its single process has no such neighbour.
 *
 * The UPDATE rewrites every key once, in this migration's transaction (on PostgreSQL: a row lock
 * on each key until it commits; revocations and last_used_at writes wait for it).
 */
export class ApiKeyScopesAndExpiry1764500000000 implements MigrationInterface {
  name = 'ApiKeyScopesAndExpiry1764500000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`ALTER TABLE api_keys ADD COLUMN scopes integer NOT NULL DEFAULT 0`);
    await queryRunner.query(`ALTER TABLE api_keys ADD COLUMN expires_at ${timestamp} NULL`);
    await queryRunner.query(`
      UPDATE api_keys SET scopes = COALESCE(
        (SELECT CASE m.role WHEN 'admin' THEN 114 WHEN 'member' THEN 34 WHEN 'viewer' THEN 34 ELSE 0 END
          FROM memberships m
          WHERE m.organization_id = api_keys.organization_id AND m.user_id = api_keys.user_id),
        0)`);
    if (queryRunner.connection.options.type === 'postgres') {
      await queryRunner.query(`ALTER TABLE api_keys ALTER COLUMN scopes DROP DEFAULT`);
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE api_keys DROP COLUMN expires_at`);
    await queryRunner.query(`ALTER TABLE api_keys DROP COLUMN scopes`);
  }
}
