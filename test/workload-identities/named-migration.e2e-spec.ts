import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { WorkloadIdentitiesNamed1765800000000 } from '../../src/database/migrations/1765800000000-workload-identities-named';
import { migratedApp } from '../support/migrations';
import { createTestDatabase, DATABASE_KIND, TestApp } from '../support/test-app';

/**
 * Migration 1765800000000 (docs/workload-identities.md#naming-the-identity): the identities that exist keep being
 * matched by issuer and subject alone (`reachable_by = 'subject'`), except the ACTIVE ones whose issuer and subject an
 * ACTIVE identity of another organization also has, which are reached by their id only from then on.
 */
describe(`workload identities named by client_id, migrated on ${DATABASE_KIND}`, () => {
  const database = createTestDatabase();
  const at = new Date(Date.UTC(2026, 0, 1)).toISOString();
  const organizations = { acme: randomUUID(), globex: randomUUID() };
  const userId = randomUUID();
  const ids = {
    acmeShared: randomUUID(),
    globexShared: randomUUID(),
    acmeOwn: randomUUID(),
    acmeBroad: randomUUID(),
    acmeNarrow: randomUUID(),
    acmeRevokedShared: randomUUID(),
    globexAlone: randomUUID(),
  };
  let t: TestApp;

  beforeAll(async () => {
    t = await migratedApp(database, WorkloadIdentitiesNamed1765800000000, async (old) => {
      await old.query(`INSERT INTO users (id, email, created_at) VALUES ('${userId}', 'mig-wi@example.com', '${at}')`);
      for (const [name, id] of Object.entries(organizations)) {
        await old.query(`INSERT INTO organizations (id, name, access_token_lifetime, created_at, updated_at)
          VALUES ('${id}', 'mig-wi-${name}', 1800, '${at}', '${at}')`);
      }
      const identity = async (id: string, organizationId: string, subject: string, status = 'ACTIVE') =>
        old.query(`INSERT INTO workload_identities (id, organization_id, user_id, trusted_issuer_id, issuer, label,
            subject, conditions, status, scopes, created_at, updated_at)
          VALUES ('${id}', '${organizationId}', '${userId}', '${randomUUID()}', 'https://ci.example', 'x',
            '${subject}', '{}', '${status}', 0, '${at}', '${at}')`);
      // Two organizations with one subject: a takeover or a deadlock already.
      await identity(ids.acmeShared, organizations.acme, 'repo:acme/app:ref:refs/heads/main');
      await identity(ids.globexShared, organizations.globex, 'repo:acme/app:ref:refs/heads/main');
      // Alone in its organization, or beside another of the same organization (most specific wins): unchanged.
      await identity(ids.acmeOwn, organizations.acme, 'repo:acme/own:ref:refs/heads/main');
      await identity(ids.acmeBroad, organizations.acme, 'repo:acme/team:ref:refs/heads/main');
      await identity(ids.acmeNarrow, organizations.acme, 'repo:acme/team:ref:refs/heads/main');
      // A revoked one does not count against another organization's.
      await identity(ids.acmeRevokedShared, organizations.acme, 'repo:globex/alone:ref:refs/heads/main', 'REVOKED');
      await identity(ids.globexAlone, organizations.globex, 'repo:globex/alone:ref:refs/heads/main');
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  const reach = async (): Promise<Record<string, string>> => {
    const rows: Array<{ id: string; reachable_by: string }> = await t
      .get(DataSource)
      .query('SELECT id, reachable_by FROM workload_identities');
    return Object.fromEntries(rows.map((row) => [row.id, row.reachable_by]));
  };

  it('keeps matching the existing identities by subject, but those another organization shares by their id only', async () => {
    expect(await reach()).toEqual({
      [ids.acmeShared]: 'client_id',
      [ids.globexShared]: 'client_id',
      [ids.acmeOwn]: 'subject',
      [ids.acmeBroad]: 'subject',
      [ids.acmeNarrow]: 'subject',
      [ids.acmeRevokedShared]: 'subject',
      [ids.globexAlone]: 'subject',
    });
  });

  it('refuses any other value, and goes down and up again on this database', async () => {
    await expect(
      t.get(DataSource).query(`UPDATE workload_identities SET reachable_by = 'anything' WHERE id = '${ids.acmeOwn}'`),
    ).rejects.toThrow(/CHECK|check/);
    const runner = t.get(DataSource).createQueryRunner();
    const migration = new WorkloadIdentitiesNamed1765800000000();
    try {
      await migration.down(runner);
      await migration.up(runner);
    } finally {
      await runner.release();
    }
    expect(Object.keys(await reach())).toHaveLength(7);
  });
});
