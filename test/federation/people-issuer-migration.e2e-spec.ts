import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { OnePeopleIssuerPerOrganization1765710000000 } from '../../src/database/migrations/1765710000000-one-people-issuer-per-organization';
import { TrustedIssuerError, TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { migratedApp } from '../support/migrations';
import { createTestDatabase, DATABASE_KIND, TestApp } from '../support/test-app';

/**
 * Migration 1765710000000 on a database made when an organization could trust several people issuers
 * (docs/federation.md#trusted-issuers): the oldest of each organization stays, the others are removed and audited
 * (reason duplicate_people_issuer), their pending sign-ins with them; the migration never fails on them. Then the
 * partial unique index refuses a second one, and the migration goes down and up again.
 */
describe(`one people issuer per organization, migrated on ${DATABASE_KIND}`, () => {
  const database = createTestDatabase();
  const at = (day: number) => new Date(Date.UTC(2026, 0, day)).toISOString();
  const organizations = { acme: randomUUID(), globex: randomUUID(), tie: randomUUID() };
  const ids = {
    acmeOldest: randomUUID(),
    acmeLater: randomUUID(),
    acmeLatest: randomUUID(),
    acmeWorkloads: randomUUID(),
    globex: randomUUID(),
    tieFirst: '00000000-0000-4000-8000-000000000001',
    tieSecond: '00000000-0000-4000-8000-000000000002',
  };
  let t: TestApp;

  beforeAll(async () => {
    // The schema as it was before the migration, with several people issuers in two organizations.
    t = await migratedApp(database, OnePeopleIssuerPerOrganization1765710000000, async (old) => {
      for (const [name, id] of Object.entries(organizations)) {
        await old.query(`INSERT INTO organizations (id, name, access_token_lifetime, created_at, updated_at)
          VALUES ('${id}', 'mig-${name}', 1800, '${at(1)}', '${at(1)}')`);
      }
      const entry = async (id: string, organizationId: string, issuer: string, kind: string, createdAt: string) =>
        old.query(`INSERT INTO trusted_issuers (id, organization_id, issuer, kind, audience, client_id,
            token_endpoint_auth, email_domains, created_at)
          VALUES ('${id}', '${organizationId}', '${issuer}', '${kind}', 'console', ${kind === 'people' ? "'console'" : 'NULL'},
            ${kind === 'people' ? "'client_secret_basic'" : 'NULL'}, '[]', '${createdAt}')`);
      await entry(ids.acmeLater, organizations.acme, 'https://later.acme.example', 'people', at(5));
      await entry(ids.acmeOldest, organizations.acme, 'https://oldest.acme.example', 'people', at(2));
      await entry(ids.acmeLatest, organizations.acme, 'https://latest.acme.example', 'people', at(9));
      await entry(ids.acmeWorkloads, organizations.acme, 'https://ci.acme.example', 'workloads', at(3));
      await entry(ids.globex, organizations.globex, 'https://sso.globex.example', 'people', at(7));
      // Made in the same instant: the lower id is the older, as single sign-on ordered them.
      await entry(ids.tieSecond, organizations.tie, 'https://second.tie.example', 'people', at(4));
      await entry(ids.tieFirst, organizations.tie, 'https://first.tie.example', 'people', at(4));
      // A sign-in under way through a people issuer that goes.
      await old.query(`INSERT INTO console_sso_requests (id, state_hash, binding_hash, organization_id,
          trusted_issuer_id, nonce, code_verifier, created_at, expires_at)
        VALUES ('${randomUUID()}', '${'a'.repeat(64)}', '${'b'.repeat(64)}', '${organizations.acme}', '${ids.acmeLater}',
          'nonce', '${'c'.repeat(43)}', '${at(5)}', '${at(6)}')`);
    });
  }, 60_000);
  afterAll(async () => {
    await t.close();
    await database.drop();
  });

  const query = <Row>(text: string): Promise<Row[]> => t.get(DataSource).query(text);

  it('keeps the oldest people issuer of each organization and every workloads issuer', async () => {
    const rows = await query<{ id: string }>('SELECT id FROM trusted_issuers ORDER BY id');
    expect(rows.map((row) => row.id)).toEqual(
      [ids.acmeOldest, ids.acmeWorkloads, ids.globex, ids.tieFirst].sort((a, b) => a.localeCompare(b)),
    );
    expect(await query('SELECT id FROM console_sso_requests')).toEqual([]);
  });

  it('records each removal in the audit trail, reason duplicate_people_issuer, no actor', async () => {
    const rows = await query<Record<string, unknown>>(
      `SELECT action, organization_id, actor_user_id, target_type, target_id, reason FROM audit_events
        WHERE action = 'trusted_issuer.removed' ORDER BY target_id`,
    );
    const removed = (organizationId: string, id: string) => ({
      action: 'trusted_issuer.removed',
      organization_id: organizationId,
      actor_user_id: null,
      target_type: 'trusted_issuer',
      target_id: id,
      reason: 'duplicate_people_issuer',
    });
    expect(rows).toEqual(
      [
        removed(organizations.acme, ids.acmeLater),
        removed(organizations.acme, ids.acmeLatest),
        removed(organizations.tie, ids.tieSecond),
      ].sort((a, b) => a.target_id.localeCompare(b.target_id)),
    );
  });

  it('refuses a second people issuer from then on: the service, and the index itself', async () => {
    const add = t.get(TrustedIssuersService).add({
      organization: 'mig-globex',
      issuer: 'https://other.globex.example',
      kind: 'people',
      clientId: 'console',
      clientSecret: 'secret',
      emailDomains: [],
    });
    await expect(add).rejects.toThrow(TrustedIssuerError);
    await expect(add).rejects.toThrow(
      `mig-globex already has a people issuer, https://sso.globex.example (id ${ids.globex})`,
    );
    await expect(
      query(`INSERT INTO trusted_issuers (id, organization_id, issuer, kind, audience, client_id, email_domains, created_at)
        VALUES ('${randomUUID()}', '${organizations.globex}', 'https://other.globex.example', 'people', 'console',
          'console', '[]', '${at(10)}')`),
    ).rejects.toThrow(/unique|UNIQUE/);
  });

  it('goes down and up again on this database, keeping its rows', async () => {
    const runner = t.get(DataSource).createQueryRunner();
    const migration = new OnePeopleIssuerPerOrganization1765710000000();
    try {
      await migration.down(runner);
      await migration.up(runner);
    } finally {
      await runner.release();
    }
    expect(await query('SELECT id FROM trusted_issuers')).toHaveLength(4);
  });
});
