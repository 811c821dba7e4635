import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * Webhooks and workload identities get permissions of their own (docs/adr/0052-one-credential-core.md#permissions):
 * webhooks:read 256, webhooks:write 512, workload_identities:create 1024, :read 2048, :revoke 4096, :manage 8192. Their
 * routes were gated by api_keys:create 1, :read 2, :revoke 4 and :manage 8, so every stored scope mask (keys and
 * workload identities) holding one of those gets the permissions that took over its routes: what a credential could
 * do, it still can. Down clears the new bits.
 */
const SUCCESSORS: ReadonlyArray<[older: number, newer: number]> = [
  [1, 1024],
  [2, 2048],
  [4, 4096],
  [8, 256 | 512 | 8192],
];
const TABLES = ['api_keys', 'workload_identities'];

export class CredentialPermissions1765870000000 implements MigrationInterface {
  name = 'CredentialPermissions1765870000000';

  async up(queryRunner: QueryRunner): Promise<void> {
    for (const table of TABLES) {
      for (const [older, newer] of SUCCESSORS) {
        await queryRunner.query(`UPDATE ${table} SET scopes = scopes | ${newer} WHERE (scopes & ${older}) <> 0`);
      }
    }
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    for (const table of TABLES) await queryRunner.query(`UPDATE ${table} SET scopes = scopes & 255`);
  }
}
