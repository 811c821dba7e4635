import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * `resource_servers.scopes`: the scopes a resource server declares (`resource-server add --scope`, docs/mcp.md), a JSON
 * array of `{ name, description }` as text, like `trusted_issuers.allowed_origins`. Servers registered before declare
 * none: their tokens keep carrying Gatehouse's permissions (docs/adr/0049-resource-server-scopes.md).
 */
export class ResourceServerScopes1765852000000 implements MigrationInterface {
  name = 'ResourceServerScopes1765852000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE resource_servers ADD COLUMN scopes text NOT NULL DEFAULT '[]'`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`ALTER TABLE resource_servers DROP COLUMN scopes`);
  }
}
