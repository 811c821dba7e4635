import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * GET /v1/organization/api-keys lists every key of an organization newest first, the ACTIVE ones by
 * default (docs/api.md#get-v1organizationapi-keys). The owner indexes start with user_id and cannot
 * serve it: without these, each page would read and sort every key of the organization. With them,
 * a page and its count read the organization's keys in list order and stop at the list window, as
 * the owner's list does: api_keys_org_newest holds every key, api_keys_org_active (partial) the
 * ACTIVE ones only, so that revoked keys cost nothing to the default list.
 *
 * Outside a transaction, so that PostgreSQL can build them CONCURRENTLY (see 1764300000000). An
 * index left invalid by a build that failed half-way is dropped first, so that running the
 * migration again repairs it.
 */
export class ApiKeysOrganizationNewest1764810000000 implements MigrationInterface {
  name = 'ApiKeysOrganizationNewest1764810000000';
  transaction = false;

  async up(queryRunner: QueryRunner): Promise<void> {
    const indexes = {
      api_keys_org_newest: 'api_keys (organization_id, created_at DESC, id DESC)',
      api_keys_org_active: `api_keys (organization_id, created_at DESC, id DESC) WHERE status = 'ACTIVE'`,
    };
    for (const [name, definition] of Object.entries(indexes)) {
      if (queryRunner.connection.options.type === 'postgres') {
        await queryRunner.query(`DROP INDEX CONCURRENTLY IF EXISTS ${name}`);
        await queryRunner.query(`CREATE INDEX CONCURRENTLY ${name} ON ${definition}`);
      } else {
        await queryRunner.query(`CREATE INDEX ${name} ON ${definition}`);
      }
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX api_keys_org_active`);
    await queryRunner.query(`DROP INDEX api_keys_org_newest`);
  }
}
