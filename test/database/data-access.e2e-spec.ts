import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { ApiKey } from '../../src/api-keys/api-key.entity';
import { ApiKeysRepository } from '../../src/api-keys/api-keys.repository';
import { IdentityService } from '../../src/identity/identity.service';
import { explain } from '../support/query-plans';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

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

  /** The calls that reach the database: the pool on PostgreSQL, DataSource.query on SQLite (Dialect.rows). */
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
        // An admin's default scopes: api_keys:read 2, audit:read 16, integrations:read 32, integrations:write 64.
        scopes: 2 | 16 | 32 | 64,
        expiresAtMs: null,
        allowedCidrs: null,
        rateLimit: null,
      },
      ownerAccess: { role: 'admin', accessTokenLifetime: 1800 },
    });
  });

  it("reads a key's allowlist and rate limit in the same query", async () => {
    const { id } = await t.createKey(admin, 'restricted', {
      allowed_cidrs: ['10.0.0.0/8', '2001:db8::/32'],
      rate_limit: { requests: 5, window_seconds: 60 },
    });
    expect((await keys.findCredential(id))?.key).toMatchObject({
      allowedCidrs: '10.0.0.0/8,2001:db8::/32',
      rateLimit: { requests: 5, windowSeconds: 60 },
    });
  });

  it('reads the expiry as epoch milliseconds, exactly, and the scopes as their mask', async () => {
    const expiresAt = new Date(Date.now() + 3_600_000 + 123).toISOString();
    const { id } = await t.createKey(admin, 'expiring', { scopes: ['integrations:read'], expires_at: expiresAt });
    const found = await keys.findCredential(id);
    expect(found?.key.expiresAtMs).toBe(Date.parse(expiresAt));
    expect(typeof found?.key.expiresAtMs).toBe('number');
    expect(found?.key.scopes).toBe(32);
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

    // Added back: a new session (the earlier membership's session tokens stay refused, docs/adr/0025-session-sign-out.md).
    const back = await t.user({ org: 'data-access-2', email: member.email, role: 'member' });
    await t.http().delete(`/v1/user-api-keys/${id}`).set('Authorization', `Bearer ${back.token}`).expect(200);
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

  let listed: { userId: string; organizationId: string } | undefined;
  /**
   * A member with 300 keys (the 100 oldest revoked) in an organization whose 40 other members have 50
   * active keys each, all made over the same weeks, with fresh statistics: the lists' plans are planned on a table as it is in use.
   * PostgreSQL plans by its statistics: on a table of a few rows, reading the organization's index
   * (whose user_id filter finds an owner's rows in the same order) costs what reading the owner's
   * does, and sorting a handful of rows costs less than reading them in order.
   */
  async function organizationInUse(): Promise<{ userId: string; organizationId: string }> {
    if (listed) return listed;
    const members = [];
    for (let m = 0; m < 41; m += 1) members.push(await t.user({ org: 'data-access-list', role: 'member' }));
    for (const [m, { userId, organizationId }] of members.entries()) {
      const values = Array.from({ length: m === 0 ? 300 : 50 }, (_, i) => {
        const id = `bbbbbbbb-${String(m).padStart(4, '0')}-4000-8000-${String(i).padStart(12, '0')}`;
        const at = new Date(Date.UTC(2026, 0, 1) + (i * (m === 0 ? 1 : 6) * 41 + m) * 60_000).toISOString();
        const status = m === 0 && i < 100 ? 'REVOKED' : 'ACTIVE';
        return `('${id}', '${organizationId}', '${userId}', 'k', '${'0'.repeat(64)}', '${status}', 0, '${at}', '${at}')`;
      });
      await dataSource.query(`INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, scopes,
        created_at, updated_at) VALUES ${values.join(', ')}`);
    }
    await dataSource.query(DATABASE_KIND === 'sqlite' ? 'ANALYZE' : 'VACUUM ANALYZE api_keys');
    listed = { userId: members[0].userId, organizationId: members[0].organizationId };
    return listed;
  }

  /** The plan of the first statement `run` sends to the database (PostgreSQL: with the scans `forbid` names off). */
  async function planOf(
    run: () => Promise<unknown>,
    forbid?: ReadonlyArray<'seqscan' | 'bitmapscan'>,
  ): Promise<string> {
    const query = spyOnQueries();
    await run();
    const [sql, parameters] = query.mock.calls[0] as [string, unknown[]];
    query.mockRestore();
    return explain(dataSource, sql, parameters, forbid);
  }
  /**
   * The lists' plans as on a table in steady use. VACUUM cannot mark pages all-visible while another test worker's
   * transaction is open in the same database; without the visibility map PostgreSQL once preferred a bitmap scan of
   * the owner's usable keys for the count (not stopping at the window), where a vacuumed table in use reads the index.
   */
  const STEADY: ReadonlyArray<'seqscan' | 'bitmapscan'> = ['seqscan', 'bitmapscan'];

  it('looks keys and memberships up by index only (no scan, no materialized view)', async () => {
    const { id } = await t.createKey(admin);
    const text = await planOf(() => keys.findCredential(id));
    expect(text).not.toMatch(/MATERIALIZE|SCAN (m|k|o|memberships|organizations|api_keys)\b|Seq Scan/);
    expect(text).toMatch(DATABASE_KIND === 'sqlite' ? /SEARCH m USING INDEX/ : /Index (Only )?Scan/);
  });

  it.each([
    // The count of the active keys may read either partial index of them (both hold the owner's
    // ACTIVE keys, api_keys_owner_usable by expiry): it stops at the window either way.
    ['active keys', false, 'api_keys_owner_active', '(api_keys_owner_active|api_keys_owner_usable)'],
    ['all keys', true, 'api_keys_owner_newest', 'api_keys_owner_newest'],
  ])(
    'lists and counts %s (include_revoked=%s) from %s, in order, without a scan',
    async (_name, includeRevoked, index, countIndex) => {
      const owner = await organizationInUse();
      const text = await planOf(() => keys.findPageByOwner(owner, { limit: 20, offset: 40, includeRevoked }), STEADY);
      expect(text).not.toMatch(/SCAN api_keys\b|Seq Scan|Bitmap/);
      // Both the count and the page read an index, the page the one in list order.
      const reads = (name: string) => text.match(new RegExp(`INDEX ${name} |Index (Only )?Scan using ${name} `, 'g'));
      expect(reads(countIndex)).toHaveLength(2);
      expect(reads(index)?.length).toBeGreaterThanOrEqual(1);
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

  it.each([
    ['active keys', false, 'api_keys_org_active'],
    ['all keys', true, 'api_keys_org_newest'],
  ])(
    "lists and counts an organization's %s (include_revoked=%s) from %s, in order, without a scan",
    async (_name, includeRevoked, index) => {
      const { organizationId } = await organizationInUse();
      const text = await planOf(
        () =>
          t.get(ApiKeysRepository).findPageByOrganization(organizationId, { limit: 20, offset: 40, includeRevoked }),
        STEADY,
      );
      expect(text).not.toMatch(/SCAN api_keys\b|Seq Scan|Bitmap/);
      // The count and the page both read the organization's index (PostgreSQL may read the count
      // from either: both hold the organization's keys in list order, the partial one only ACTIVE).
      const reads = (name: string) => text.match(new RegExp(`INDEX ${name} |Index (Only )?Scan using ${name} `, 'g'));
      if (DATABASE_KIND === 'sqlite') {
        expect(reads(index)).toHaveLength(2);
        expect(text.split('\n').filter((line) => line.includes('TEMP B-TREE'))).toEqual([
          'USE TEMP B-TREE FOR ORDER BY',
        ]);
        expect(text.trim().endsWith('USE TEMP B-TREE FOR ORDER BY')).toBe(true);
      } else {
        expect(reads(index)?.length).toBeGreaterThanOrEqual(1);
        expect(reads('api_keys_org_(newest|active)')).toHaveLength(2);
        expect(text).not.toMatch(/Limit[^\n]*\n\s*->\s*(Incremental )?Sort/);
      }
    },
  );

  it("counts an owner's usable keys for the cap from api_keys_owner_usable only: no expired key is read", async () => {
    const owner = await t.user({ org: 'data-access-cap' });
    await t.createKey(owner);
    const template = await keys.findById((await t.createKey(owner)).id);
    // An owner with many expired keys left unrevoked, and statistics that know it.
    const values = Array.from({ length: 500 }, (_, i) => {
      const id = `aaaaaaaa-0000-4000-8000-${String(i).padStart(12, '0')}`;
      return `('${id}', '${owner.organizationId}', '${owner.userId}', 'old', '${'0'.repeat(64)}', 'ACTIVE', 0,
        '2020-01-02T00:00:00.000Z', '2020-01-01T00:00:00.000Z', '2020-01-01T00:00:00.000Z')`;
    });
    await dataSource.query(`INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, scopes,
      expires_at, created_at, updated_at) VALUES ${values.join(', ')}`);
    await dataSource.query(DATABASE_KIND === 'sqlite' ? 'ANALYZE' : 'VACUUM ANALYZE api_keys');
    const statements: Array<[string, unknown[]]> = [];
    await dataSource
      .transaction(async (manager) => {
        const query = manager.query.bind(manager);
        jest.spyOn(manager, 'query').mockImplementation((sql: string, parameters?: unknown) => {
          statements.push([sql, (parameters as unknown[] | undefined) ?? []]);
          return query(sql, parameters as unknown[] | undefined);
        });
        const key = Object.assign(new ApiKey(), template, {
          id: '00000000-0000-4000-8000-0000000000cc',
          createdAt: new Date(),
          updatedAt: new Date(),
        });
        await keys.insertWithinActiveCap(key, 100, manager);
        throw new Error('roll back');
      })
      .catch((error: Error) => expect(error.message).toBe('roll back'));
    const [sql, parameters] = statements.find(([text]) => text.trimStart().startsWith('INSERT'))!;
    if (DATABASE_KIND === 'sqlite') {
      const plan = await dataSource.query<Array<{ detail: string }>>(`EXPLAIN QUERY PLAN ${sql}`, parameters);
      const text = plan.map((row) => row.detail).join('\n');
      expect(text).not.toMatch(/SCAN api_keys\b/);
      // The two ranges (no expiry; expiring after now), each bounded on the index by its expiry condition.
      expect(text.match(/INDEX api_keys_owner_usable /g)).toHaveLength(2);
      expect(text).toMatch(/api_keys_owner_usable \(user_id=\? AND organization_id=\? AND expires_at=\?\)/);
      expect(text).toMatch(/api_keys_owner_usable \(user_id=\? AND organization_id=\? AND expires_at>\?\)/);
    } else {
      // What the statement really reads, run and rolled back: no scan of the table, and none of the 500
      // expired keys visited (a scan that read and dropped them would say "Rows Removed by Filter: 500").
      const text = await dataSource
        .transaction(async (manager) => {
          // As on a table too large to read whole (as above).
          await manager.query('SET LOCAL enable_seqscan = off');
          const rows = await manager.query<Array<{ 'QUERY PLAN': string }>>(`EXPLAIN ANALYZE ${sql}`, parameters);
          throw Object.assign(new Error('roll back'), { plan: rows.map((row) => row['QUERY PLAN']).join('\n') });
        })
        .catch((error: Error & { plan?: string }) => error.plan ?? '');
      expect(text).toMatch(/Index (Only )?Scan using api_keys_owner_usable /);
      expect(text).not.toMatch(/Seq Scan/);
      const removed = [...text.matchAll(/Rows Removed by Filter: (\d+)/g)].map((match) => Number(match[1]));
      expect({ removed, plan: text }).toEqual({ removed: removed.filter((n) => n < 10), plan: text });
    }
  });
});
