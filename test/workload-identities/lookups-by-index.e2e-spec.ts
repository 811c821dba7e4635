import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import type { TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { WorkloadIdentitiesRepository } from '../../src/workload-identities/workload-identities.repository';
import { CredentialKinds } from '../../src/credentials/credential-kinds';
import { bearer } from '../support/http-assertions';
import { explain } from '../support/query-plans';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { createIdentity, trustIssuer } from './fixtures';

/**
 * The token paths' reads of workload identities (docs/adr/0038-workload-identities.md): the per-request lookup joins
 * identity's member_access view and is batched per event-loop turn, as a key's; the exchange's candidates come from the
 * partial index on (trusted issuer, subject); the lists read their indexes in order.
 */
describe(`workload identity lookups by index on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let dataSource: DataSource;
  let repository: WorkloadIdentitiesRepository;
  let owner: TestUser;
  /** A member with 400 identities, a quarter of them revoked. */
  let seeded: TestUser;
  let issuer: TrustedIssuer;

  beforeAll(async () => {
    t = await createTestApp();
    dataSource = t.get(DataSource);
    repository = t.get(WorkloadIdentitiesRepository);
    owner = await t.user({ org: 'wi-plans', role: 'admin' });
    seeded = await t.user({ org: 'wi-plans', role: 'member' });
    issuer = await trustIssuer(t, owner.organizationId);
    // Enough rows, and statistics that know them, for the planners to prefer the indexes they would in use.
    const values = Array.from({ length: 400 }, (_, i) => {
      const id = `cccccccc-0000-4000-8000-${String(i).padStart(12, '0')}`;
      const at = new Date(Date.UTC(2026, 0, 1) + i * 60_000).toISOString();
      return `('${id}', '${seeded.organizationId}', '${seeded.userId}', '${issuer.id}', '${issuer.issuer}', 'p', 'sub-${i}',
        '{}', '${i % 4 === 0 ? 'REVOKED' : 'ACTIVE'}', 'subject', 0, '${at}', '${at}')`;
    });
    await dataSource.query(`INSERT INTO workload_identities (id, organization_id, user_id, trusted_issuer_id, issuer,
      label, subject, conditions, status, reachable_by, scopes, created_at, updated_at) VALUES ${values.join(', ')}`);
    await dataSource.query(`${DATABASE_KIND === 'sqlite' ? 'ANALYZE' : 'VACUUM ANALYZE'} workload_identities`);
  });
  afterAll(() => t.close());

  /** The calls that reach the database: the pool on PostgreSQL, DataSource.query on SQLite (Dialect.rows). */
  function spyOnQueries(): jest.SpyInstance {
    if (DATABASE_KIND === 'sqlite') return jest.spyOn(dataSource, 'query');
    return jest.spyOn((dataSource.driver as PostgresDriver).master as Pool, 'query');
  }
  afterEach(() => jest.restoreAllMocks());

  async function planOf(run: () => Promise<unknown>): Promise<string> {
    const query = spyOnQueries();
    await run();
    const [sql, parameters] = query.mock.calls[0] as [string, unknown[]];
    query.mockRestore();
    return explain(dataSource, sql, parameters, ['seqscan', 'bitmapscan']);
  }

  it("answers a turn's liveness reads (the kind store the token authenticator reads) with one query", async () => {
    const made = await Promise.all([1, 2, 3].map(() => createIdentity(t, owner, issuer)));
    await t.http().delete(`/v1/workload-identities/${made[1].id}`).set(bearer(owner.token)).expect(200);
    const store = t.get(CredentialKinds).of('workload_identity')!;
    const query = spyOnQueries();
    const found = await Promise.all([
      ...made.map(({ id }) => store.read(id)),
      store.read('00000000-0000-4000-8000-000000000000'),
    ]);
    expect(found.map((state) => state && { userId: state.userId, status: state.status })).toEqual([
      { userId: owner.userId, status: 'ACTIVE' },
      { userId: owner.userId, status: 'REVOKED' },
      { userId: owner.userId, status: 'ACTIVE' },
      undefined,
    ]);
    expect(query).toHaveBeenCalledTimes(1);
  });

  it('reads an identity and its owner by primary key, through member_access, without a scan', async () => {
    const text = await planOf(() => repository.read('cccccccc-0000-4000-8000-000000000001'));
    expect(text).not.toMatch(/MATERIALIZE|SCAN (w|m|o|memberships|organizations|workload_identities)\b|Seq Scan/);
    expect(text).toMatch(DATABASE_KIND === 'sqlite' ? /SEARCH w USING INDEX/ : /Index (Only )?Scan/);
  });

  it('reads the identity an exchange names (client_id) and its owner by primary key, without a scan', async () => {
    const text = await planOf(() => repository.findNamed('cccccccc-0000-4000-8000-000000000001'));
    expect(text).not.toMatch(/MATERIALIZE|SCAN (w|m|o|memberships|organizations|workload_identities)\b|Seq Scan/);
    expect(text).toMatch(DATABASE_KIND === 'sqlite' ? /SEARCH w USING INDEX/ : /Index (Only )?Scan/);
  });

  it("reads the exchange's candidates from workload_identities_match", async () => {
    const text = await planOf(() => repository.findCandidates([issuer.id], 'sub-7'));
    expect(text).not.toMatch(/SCAN (w|workload_identities)\b|Seq Scan/);
    expect(text).toMatch(/workload_identities_match/);
  });

  it.each([
    ['the owner list', () => repository.findPageByOwner(seeded, { limit: 20, offset: 40, includeRevoked: true })],
    [
      "the organization's list",
      () =>
        t
          .get(WorkloadIdentitiesRepository)
          .findPageByOrganization(owner.organizationId, { limit: 20, offset: 40, includeRevoked: false }),
    ],
  ])('reads %s from an index, without a scan', async (_name, run) => {
    const text = await planOf(run);
    expect(text).not.toMatch(/SCAN workload_identities\b|Seq Scan/);
    expect(text).toMatch(/workload_identities_(owner|org)_newest/);
  });
});
