import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { ApiKeysRepository } from '../src/api-keys/api-keys.repository';
import { IdentityService } from '../src/identity/identity.service';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from './support/test-app';

/**
 * The api-keys repository's hot-path read (docs/adr/0010-data-access-repositories.md): a key and its
 * owner's membership in one query through identity's member_access view, the lookups of one
 * event-loop turn in one query, every lookup reading the database as it is when asked, and a plan
 * that stays on indexes however many memberships there are.
 */
describe(`api-keys repository on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  let keys: ApiKeysRepository;
  let dataSource: DataSource;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.user({ org: 'data-access', role: 'admin' });
    keys = t.get(ApiKeysRepository);
    dataSource = t.get(DataSource);
  });

  afterAll(() => t.close());

  /** The calls that reach the database: the pool on PostgreSQL, DataSource.query on SQLite (rowReader). */
  function spyOnQueries(): jest.SpyInstance {
    if (DATABASE_KIND === 'sqlite') return jest.spyOn(dataSource, 'query');
    return jest.spyOn((dataSource.driver as PostgresDriver).master as Pool, 'query');
  }
  afterEach(() => jest.restoreAllMocks());

  it("reads a key with its owner's role and the organization's token lifetime", async () => {
    const { id } = await t.createKey(admin);
    expect(await keys.findCredential(id)).toEqual({
      key: {
        id,
        organizationId: admin.organizationId,
        userId: admin.userId,
        secretHash: expect.stringMatching(/^[0-9a-f]{64}$/),
        status: 'ACTIVE',
      },
      ownerAccess: { role: 'admin', accessTokenLifetime: 1800 },
    });
  });

  it('sees a role change, a lifetime change, a removal and a revocation at the next lookup', async () => {
    const member = await t.user({ org: 'data-access-2', role: 'member' });
    const { id } = await t.createKey(member);
    const identity = t.get(IdentityService);
    await identity.setRole(member.organizationId, member.userId, 'viewer');
    await identity.setAccessTokenLifetime(member.organizationId, 600);
    expect((await keys.findCredential(id))?.ownerAccess).toEqual({ role: 'viewer', accessTokenLifetime: 600 });

    await identity.removeMember(member.organizationId, member.userId);
    const removed = await keys.findCredential(id);
    expect(removed?.key.status).toBe('ACTIVE');
    expect(removed?.ownerAccess).toBeNull();

    await identity.setRole(member.organizationId, member.userId, 'member');
    await t.http().delete(`/v1/user-api-keys/${id}`).set('Authorization', `Bearer ${member.token}`).expect(200);
    expect((await keys.findCredential(id))?.key.status).toBe('REVOKED');
  });

  it('answers the lookups of one event-loop turn with one query', async () => {
    const created = await Promise.all([t.createKey(admin), t.createKey(admin), t.createKey(admin)]);
    const query = spyOnQueries();
    const found = await Promise.all([
      ...created.map(({ id }) => keys.findCredential(id)),
      keys.findCredential('00000000-0000-4000-8000-000000000000'),
    ]);
    expect(found.map((credential) => credential?.key.id)).toEqual([...created.map(({ id }) => id), undefined]);
    expect(query).toHaveBeenCalledTimes(1);
  });

  /** The plan of the first statement `run` sends to the database. */
  async function planOf(run: () => Promise<unknown>): Promise<string> {
    const query = spyOnQueries();
    await run();
    const [sql, parameters] = query.mock.calls[0] as [string, unknown[]];
    query.mockRestore();
    const plan =
      DATABASE_KIND === 'sqlite'
        ? (await dataSource.query<Array<{ detail: string }>>(`EXPLAIN QUERY PLAN ${sql}`, parameters)).map(
            (row) => row.detail,
          )
        : await dataSource.transaction(async (manager) => {
            // Tiny test tables would make a sequential scan the cheapest plan; forbid it so that
            // a plan that cannot use an index shows.
            await manager.query('SET LOCAL enable_seqscan = off');
            const rows = await manager.query<Array<{ 'QUERY PLAN': string }>>(`EXPLAIN ${sql}`, parameters);
            return rows.map((row) => row['QUERY PLAN']);
          });
    return plan.join('\n');
  }

  it('looks keys and memberships up by index only (no scan, no materialized view)', async () => {
    const { id } = await t.createKey(admin);
    const text = await planOf(() => keys.findCredential(id));
    expect(text).not.toMatch(/MATERIALIZE|SCAN (m|k|o|memberships|organizations|api_keys)\b|Seq Scan/);
    expect(text).toMatch(DATABASE_KIND === 'sqlite' ? /SEARCH m USING INDEX/ : /Index (Only )?Scan/);
  });

  it.each([
    ['active keys', false, 'api_keys_owner_active'],
    ['all keys', true, 'api_keys_owner_newest'],
  ])(
    'lists and counts %s (include_revoked=%s) from %s, in order, without a scan',
    async (_name, includeRevoked, index) => {
      const owner = { userId: admin.userId, organizationId: admin.organizationId };
      const text = await planOf(() => keys.findPageByOwner(owner, { limit: 20, offset: 40, includeRevoked }));
      expect(text).not.toMatch(/SCAN api_keys\b|Seq Scan|Bitmap/);
      // Both the count and the page read the index.
      expect(text.match(new RegExp(`INDEX ${index} |Index (Only )?Scan using ${index} `, 'g'))).toHaveLength(2);
      // The page reads it in list order: nothing sorts the owner's keys before the LIMIT. The one sort is
      // the outer ORDER BY of the page's at most `limit` rows (SQLite: the last line of the plan).
      if (DATABASE_KIND === 'sqlite') {
        expect(text.split('\n').filter((line) => line.includes('TEMP B-TREE'))).toEqual([
          'USE TEMP B-TREE FOR ORDER BY',
        ]);
        expect(text.trim().endsWith('USE TEMP B-TREE FOR ORDER BY')).toBe(true);
      } else {
        expect(text).not.toMatch(/Limit[^\n]*\n\s*->\s*(Incremental )?Sort/);
      }
    },
  );
});
