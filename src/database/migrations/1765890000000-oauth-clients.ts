import { MigrationInterface, QueryRunner } from 'typeorm';
import { sqlTypes } from './sql-types';

/**
 * Clients registered with Gatehouse (docs/mcp.md#clients, docs/adr/0055-registered-oauth-clients.md): `oauth_clients`,
 * one row per client whose client_id is not a metadata document's URL: `dynamic` ones (RFC 7591, public, no
 * organization, removed once idle) and an `organization`'s own (its admins', public or with a secret, kept as an
 * HMAC). Grants get an index by client, which a client's removal revokes.
 */
export class OAuthClients1765890000000 implements MigrationInterface {
  name = 'OAuthClients1765890000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    const { uuid, timestamp } = sqlTypes(queryRunner);
    await queryRunner.query(`
      CREATE TABLE oauth_clients (
        id ${uuid} PRIMARY KEY,
        kind varchar(16) NOT NULL,
        organization_id ${uuid},
        name varchar(255) NOT NULL,
        redirect_uris text NOT NULL,
        secret_hash varchar(64),
        created_by ${uuid},
        created_at ${timestamp} NOT NULL,
        last_used_at ${timestamp}
      )`);
    // An organization's clients (its admins' list), and the dynamic ones (the operator's list, the idle sweep).
    await queryRunner.query(`CREATE INDEX oauth_clients_organization ON oauth_clients (organization_id, created_at)`);
    await queryRunner.query(`CREATE INDEX oauth_clients_kind ON oauth_clients (kind, created_at)`);
    await queryRunner.query(`CREATE INDEX oauth_grants_client ON oauth_grants (client_id)`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP INDEX oauth_grants_client`);
    await queryRunner.query(`DROP TABLE oauth_clients`);
  }
}
