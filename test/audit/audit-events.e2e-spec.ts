import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { AUDIT_ACTIONS, AuditEvent } from '../../src/audit/audit-event.entity';
import { allPages, auditEvent, auditPage, seedAuditEvents } from '../support/audit-events';
import { bearer, expectError, expectInvalidArgument, ISO_MS, UUID } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

/** List order: occurred_at, then id, both descending. */
const newestFirst = (events: AuditEvent[]): string[] =>
  [...events]
    .sort((a, b) => b.occurredAt.getTime() - a.occurredAt.getTime() || (a.id < b.id ? 1 : a.id > b.id ? -1 : 0))
    .map((event) => event.id);

const EVENT_FIELDS = [
  'action',
  'actor_api_key_id',
  'actor_email',
  'actor_user_id',
  'changes',
  'client_ip',
  'id',
  'occurred_at',
  'previous_api_key_expires_at',
  'previous_api_key_id',
  'reason',
  'request_id',
  'target_email',
  'target_id',
  'target_label',
  'target_type',
];

/** `count` events of `organizationId`, one a second back from `from`. */
function spread(
  organizationId: string | null,
  count: number,
  from = Date.now(),
  fields: Partial<AuditEvent> = {},
): AuditEvent[] {
  return Array.from({ length: count }, (_, i) =>
    auditEvent(organizationId, { occurredAt: new Date(from - i * 1000), ...fields }),
  );
}

/** GET /v1/audit-events (docs/api.md#audit-events). */
describe(`GET /v1/audit-events on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let orgs = 0;
  /** An admin of an organization of its own (no events but those the test makes). */
  const freshAdmin = (): Promise<TestUser> => t.user({ org: `audit-api-${(orgs += 1)}`, role: 'admin' });

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  describe('events', () => {
    it("lists what happened in the caller's organization, newest first, with exactly the documented fields", async () => {
      const admin = await freshAdmin();
      const key = await t.createKey(admin, 'audited', { scopes: ['api_keys:read', 'api_keys:revoke'] });
      const token = await t.exchange(key.value);
      const revoke = await t
        .http()
        .delete(`/v1/user-api-keys/${key.id}`)
        .set(bearer(token))
        .set('X-Request-Id', 'audit-api-revoke')
        .expect(200);

      const response = await t.http().get('/v1/audit-events').set(bearer(admin.token)).expect(200);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(Object.keys(response.body).sort()).toEqual(['audit_events', 'next_cursor']);
      const [revoked, created] = response.body.audit_events;
      expect(response.body.audit_events).toHaveLength(2);
      expect(response.body.next_cursor).toBeNull();
      for (const event of response.body.audit_events) expect(Object.keys(event).sort()).toEqual(EVENT_FIELDS);
      expect(revoked).toEqual({
        id: expect.stringMatching(UUID),
        action: 'api_key.revoked',
        reason: 'user',
        occurred_at: expect.stringMatching(ISO_MS),
        actor_user_id: admin.userId,
        actor_api_key_id: key.id,
        actor_email: admin.email,
        target_type: 'api_key',
        target_id: key.id,
        target_email: null,
        target_label: 'audited',
        previous_api_key_id: null,
        previous_api_key_expires_at: null,
        client_ip: expect.any(String),
        request_id: revoke.headers['x-request-id'],
        changes: null,
      });
      expect(created).toMatchObject({
        action: 'api_key.created',
        reason: null,
        actor_user_id: admin.userId,
        actor_api_key_id: null,
        target_id: key.id,
      });
      expect(created.occurred_at <= revoked.occurred_at).toBe(true);
      // Never a secret: not the key, not its secret part, not a token.
      for (const secret of [key.value, key.value.split('.')[2], token, admin.token]) {
        expect(response.text).not.toContain(secret);
      }
    });

    it('shows the e-mail address of the actor and of a user target beside their ids (one of another organization too)', async () => {
      const admin = await freshAdmin();
      const outsider = await t.user({ org: 'audit-emails-elsewhere', role: 'member' });
      const signIn = auditEvent(admin.organizationId, {
        action: 'console.sign_in_refused',
        reason: 'used',
        targetType: 'user',
        targetId: outsider.userId,
      });
      const unknownActor = auditEvent(admin.organizationId, { actorUserId: randomUUID() });
      await seedAuditEvents(t, [signIn, unknownActor]);
      const events = (await auditPage(t, admin)).audit_events as unknown as Array<Record<string, unknown>>;
      expect(events.find((event) => event.id === signIn.id)).toMatchObject({
        actor_email: null,
        target_type: 'user',
        target_email: outsider.email,
      });
      // A user no longer known (never, here) has no address: null, not an error.
      expect(events.find((event) => event.id === unknownActor.id)).toMatchObject({ actor_email: null });
    });

    it("shows a key target's label, for keys of the caller's organization only", async () => {
      const admin = await freshAdmin();
      const own = await t.createKey(admin, 'deploy bot');
      const unlabelled = await t.createKey(admin, '');
      const outsider = await t.user({ org: 'audit-labels-elsewhere', role: 'admin' });
      const theirs = await t.createKey(outsider, 'not yours');
      const pointing = auditEvent(admin.organizationId, { targetType: 'api_key', targetId: theirs.id });
      await seedAuditEvents(t, [pointing]);
      const events = (await auditPage(t, admin)).audit_events as unknown as Array<Record<string, unknown>>;
      const labelOf = (id: string) => events.find((event) => event.target_id === id)?.target_label;
      expect([labelOf(own.id), labelOf(unlabelled.id), labelOf(theirs.id)]).toEqual(['deploy bot', '', null]);
    });

    it('shows every stored field, null where not applicable, times as ISO 8601 UTC with milliseconds', async () => {
      const admin = await freshAdmin();
      const rotated = auditEvent(admin.organizationId, {
        occurredAt: new Date('2030-01-02T03:04:05.006Z'),
        action: 'api_key.rotated',
        actorUserId: admin.userId,
        actorApiKeyId: randomUUID(),
        targetType: 'api_key',
        targetId: randomUUID(),
        previousApiKeyId: randomUUID(),
        previousApiKeyExpiresAt: new Date('2030-01-02T04:04:05.006Z'),
        clientIp: '203.0.113.7',
        requestId: 'req-1',
      });
      const bare = auditEvent(admin.organizationId, {
        occurredAt: new Date('2030-01-01T00:00:00.000Z'),
        action: 'organization.updated',
      });
      await seedAuditEvents(t, [rotated, bare]);
      const page = await auditPage(t, admin, { until: '2031-01-01T00:00:00Z' });
      expect(page.audit_events).toEqual([
        {
          id: rotated.id,
          action: 'api_key.rotated',
          reason: null,
          occurred_at: '2030-01-02T03:04:05.006Z',
          actor_user_id: admin.userId,
          actor_api_key_id: rotated.actorApiKeyId,
          actor_email: admin.email,
          target_type: 'api_key',
          target_id: rotated.targetId,
          target_email: null,
          target_label: null,
          previous_api_key_id: rotated.previousApiKeyId,
          previous_api_key_expires_at: '2030-01-02T04:04:05.006Z',
          client_ip: '203.0.113.7',
          request_id: 'req-1',
          changes: null,
        },
        {
          id: bare.id,
          action: 'organization.updated',
          reason: null,
          occurred_at: '2030-01-01T00:00:00.000Z',
          actor_user_id: null,
          actor_api_key_id: null,
          actor_email: null,
          target_type: null,
          target_id: null,
          target_email: null,
          target_label: null,
          previous_api_key_id: null,
          previous_api_key_expires_at: null,
          client_ip: null,
          request_id: null,
          changes: null,
        },
      ]);
    });
  });

  describe('access', () => {
    it.each(['member', 'viewer'] as const)(
      'refuses a %s (no audit:read) with 403, before looking at the query',
      async (role) => {
        const admin = await freshAdmin();
        const user = await t.user({ org: `audit-api-${orgs}`, role });
        await t.createKey(admin);
        const plain = await t.http().get('/v1/audit-events').set(bearer(user.token));
        expectError(plain, 403, 'PERMISSION_DENIED', 'insufficient permissions', 'insufficient_permissions');
        const invalid = await t.http().get('/v1/audit-events?limit=0&bogus=1').set(bearer(user.token));
        expectError(invalid, 403, 'PERMISSION_DENIED', 'insufficient permissions', 'insufficient_permissions');
      },
    );

    it('refuses a request without a valid token with 401', async () => {
      const response = await t.http().get('/v1/audit-events');
      expectError(response, 401, 'UNAUTHENTICATED', 'user not authenticated', 'token_missing');
      expect(response.headers['www-authenticate']).toMatch(/^Bearer\b/);
    });

    it("never shows another organization's events, whatever the filters", async () => {
      const adminA = await freshAdmin();
      const adminB = await freshAdmin();
      const keyA = await t.createKey(adminA);
      await t.http().delete(`/v1/user-api-keys/${keyA.id}`).set(bearer(adminA.token)).expect(200);
      await seedAuditEvents(t, spread(adminA.organizationId, 30, Date.now(), { actorUserId: adminA.userId }));
      // Events without an organization (an exchange refused for an unknown key) are nobody's.
      await seedAuditEvents(t, spread(null, 5));

      expect((await auditPage(t, adminA)).audit_events).toHaveLength(32);
      const seenByB = [
        await auditPage(t, adminB),
        await auditPage(t, adminB, { target_id: keyA.id }),
        await auditPage(t, adminB, { actor_user_id: adminA.userId }),
        await auditPage(t, adminB, { action: 'api_key.revoked' }),
        await auditPage(t, adminB, { since: '2000-01-01T00:00:00Z', limit: 200 }),
      ];
      for (const page of seenByB) expect(page).toEqual({ audit_events: [], next_cursor: null });
    });
  });

  describe('limit', () => {
    let admin: TestUser;
    let ids: string[];
    beforeAll(async () => {
      admin = await freshAdmin();
      const events = spread(admin.organizationId, 205);
      await seedAuditEvents(t, events);
      ids = newestFirst(events);
    });

    it('is 50 by default', async () => {
      const page = await auditPage(t, admin);
      expect(page.audit_events.map((e) => e.id)).toEqual(ids.slice(0, 50));
      expect(page.next_cursor).toEqual(expect.any(String));
    });

    it.each([1, 200])('accepts %i', async (limit) => {
      const page = await auditPage(t, admin, { limit });
      expect(page.audit_events.map((e) => e.id)).toEqual(ids.slice(0, limit));
      expect(page.next_cursor).toEqual(expect.any(String));
    });

    it.each(['0', '201', '-1', '1.5', '1e2', 'abc', ''])('refuses limit=%s with 400', async (limit) => {
      expectInvalidArgument(await t.http().get(`/v1/audit-events?limit=${limit}`).set(bearer(admin.token)));
    });
  });

  describe('query validation', () => {
    let admin: TestUser;
    beforeAll(async () => {
      admin = await freshAdmin();
    });

    it.each([
      ['an unknown parameter', 'page=2'],
      ['an unknown parameter beside valid ones', 'limit=5&user_id=00000000-0000-4000-8000-000000000000'],
      ['an unknown action', 'action=api_key.deleted'],
      ['an empty action', 'action='],
      ['an action in another case', 'action=API_KEY.CREATED'],
      ['a repeated action', 'action=api_key.created&action=api_key.revoked'],
      ['a bad actor id', 'actor_user_id=not-a-uuid'],
      ['an actor id too short', 'actor_user_id=00000000-0000-4000-8000-00000000000'],
      ['a bad target id', 'target_id=42'],
      [
        'a repeated target id',
        'target_id=00000000-0000-4000-8000-000000000000&target_id=00000000-0000-4000-8000-000000000000',
      ],
      ['a date without a time', 'since=2026-01-01'],
      ['a time without a zone', 'since=2026-01-01T00:00:00'],
      ['a time without seconds', 'since=2026-01-01T00:00Z'],
      ['a date that does not exist', 'since=2026-02-30T00:00:00Z'],
      ['an hour that does not exist', 'until=2026-01-01T24:00:00Z'],
      ['a bad zone offset', 'until=2026-01-01T00:00:00+25:00'],
      ['a number as a time', 'until=1767225600'],
      ['an empty time', 'until='],
      ['since after until', 'since=2026-01-02T00:00:00Z&until=2026-01-01T23:59:59Z'],
      ['a repeated cursor', 'cursor=a&cursor=b'],
    ])('refuses %s with 400', async (_name, query) => {
      expectInvalidArgument(await t.http().get(`/v1/audit-events?${query}`).set(bearer(admin.token)));
    });

    it.each([
      ['an empty cursor', 'cursor='],
      ['a cursor that is not base64url', 'cursor=not%20a%20cursor'],
    ])('refuses %s with 400 (page_cursor_invalid)', async (_name, query) => {
      const response = await t.http().get(`/v1/audit-events?${query}`).set(bearer(admin.token));
      expectInvalidArgument(response, 'page_cursor_invalid');
    });

    it.each(AUDIT_ACTIONS)('accepts action=%s', async (action) => {
      await auditPage(t, admin, { action });
    });

    it('accepts ids in any letter case and times with an offset or a fraction', async () => {
      const id = randomUUID().toUpperCase();
      await auditPage(t, admin, {
        actor_user_id: id,
        target_id: id,
        since: '2026-01-01T01:00:00.5+01:00',
        until: '2026-01-02T00:00:00.123456789Z',
      });
    });
  });

  describe('filters', () => {
    let admin: TestUser;
    let events: AuditEvent[];
    const actor = randomUUID();
    const target = randomUUID();
    const base = Date.parse('2029-06-01T12:00:00.000Z');

    beforeAll(async () => {
      admin = await freshAdmin();
      events = Array.from({ length: 40 }, (_, i) =>
        auditEvent(admin.organizationId, {
          occurredAt: new Date(base - i * 60_000),
          action: i % 4 === 0 ? 'api_key.revoked' : 'api_key.created',
          actorUserId: i % 2 === 0 ? actor : randomUUID(),
          targetType: 'api_key',
          targetId: i % 5 === 0 ? target : randomUUID(),
          reason: i % 4 === 0 ? 'admin' : null,
        }),
      );
      await seedAuditEvents(t, events);
    });

    const expectIds = async (query: Record<string, string>, keep: (event: AuditEvent) => boolean): Promise<void> => {
      const { ids } = await allPages(t, admin, { ...query, limit: 7 });
      const expected = newestFirst(events.filter(keep));
      expect(expected.length).toBeGreaterThan(0);
      expect(ids).toEqual(expected);
    };

    it('by action', () => expectIds({ action: 'api_key.revoked' }, (e) => e.action === 'api_key.revoked'));
    it('by actor (any letter case)', () =>
      expectIds({ actor_user_id: actor.toUpperCase() }, (e) => e.actorUserId === actor));
    it('by target', () => expectIds({ target_id: target }, (e) => e.targetId === target));
    it('by action and actor', () =>
      expectIds(
        { action: 'api_key.revoked', actor_user_id: actor },
        (e) => e.action === 'api_key.revoked' && e.actorUserId === actor,
      ));
    it('by action, actor and target', () =>
      expectIds(
        { action: 'api_key.revoked', actor_user_id: actor, target_id: target },
        (e) => e.action === 'api_key.revoked' && e.actorUserId === actor && e.targetId === target,
      ));

    it('since: at or after the instant; until: before it', async () => {
      const since = new Date(base - 10 * 60_000);
      const until = new Date(base - 2 * 60_000);
      await expectIds({ since: since.toISOString() }, (e) => e.occurredAt >= since);
      await expectIds({ until: until.toISOString() }, (e) => e.occurredAt < until);
      await expectIds(
        { since: since.toISOString(), until: until.toISOString(), action: 'api_key.created' },
        (e) => e.occurredAt >= since && e.occurredAt < until && e.action === 'api_key.created',
      );
      // The same instants with a zone offset, and a fraction beyond the millisecond.
      await expectIds(
        { since: '2029-06-01T13:50:00+02:00', until: '2029-06-01T11:57:59.999001Z' },
        (e) => e.occurredAt.getTime() >= base - 10 * 60_000 && e.occurredAt.getTime() <= base - 3 * 60_000,
      );
      const empty = await auditPage(t, admin, { since: since.toISOString(), until: since.toISOString() });
      expect(empty).toEqual({ audit_events: [], next_cursor: null });
    });

    it('a filter that matches nothing is an empty page without a cursor', async () => {
      expect(await auditPage(t, admin, { target_id: randomUUID() })).toEqual({ audit_events: [], next_cursor: null });
    });
  });

  describe('pages', () => {
    it('walks every event exactly once, newest first, and the last page has next_cursor null', async () => {
      const admin = await freshAdmin();
      const events = spread(admin.organizationId, 95);
      await seedAuditEvents(t, events);
      const { ids, pages } = await allPages(t, admin, { limit: 20 });
      expect(ids).toEqual(newestFirst(events));
      expect(pages.map((page) => page.audit_events.length)).toEqual([20, 20, 20, 20, 15]);
      expect(pages.at(-1)?.next_cursor).toBeNull();
      for (const page of pages.slice(0, -1)) expect(page.next_cursor).toMatch(/^[A-Za-z0-9_-]+$/);
    });

    it('ends on a full last page without an empty one after it', async () => {
      const admin = await freshAdmin();
      await seedAuditEvents(t, spread(admin.organizationId, 40));
      const { pages } = await allPages(t, admin, { limit: 20 });
      expect(pages.map((page) => [page.audit_events.length, page.next_cursor === null])).toEqual([
        [20, false],
        [20, true],
      ]);
    });

    it('pages through events of one millisecond by id', async () => {
      const admin = await freshAdmin();
      const at = new Date();
      const events = Array.from({ length: 30 }, () => auditEvent(admin.organizationId, { occurredAt: at }));
      await seedAuditEvents(t, events);
      const { ids, pages } = await allPages(t, admin, { limit: 7 });
      expect(pages).toHaveLength(5);
      expect(ids).toEqual(newestFirst(events));
    });

    it('lets the page size change from one page to the next', async () => {
      const admin = await freshAdmin();
      const events = spread(admin.organizationId, 30);
      await seedAuditEvents(t, events);
      const first = await auditPage(t, admin, { limit: 5 });
      const second = await auditPage(t, admin, { limit: 200, cursor: first.next_cursor! });
      expect([...first.audit_events, ...second.audit_events].map((e) => e.id)).toEqual(newestFirst(events));
      expect(second.next_cursor).toBeNull();
    });

    it('accepts the same filters written differently with a cursor', async () => {
      const admin = await freshAdmin();
      const events = spread(admin.organizationId, 10, Date.parse('2029-01-01T00:00:00Z'));
      await seedAuditEvents(t, events);
      const first = await auditPage(t, admin, { limit: 4, since: '2028-01-01T00:00:00Z' });
      const second = await auditPage(t, admin, {
        limit: 4,
        since: '2028-01-01T01:00:00+01:00',
        cursor: first.next_cursor!,
      });
      expect(second.audit_events.map((e) => e.id)).toEqual(newestFirst(events).slice(4, 8));
    });

    it('skips and repeats nothing while events are written and deleted meanwhile', async () => {
      const admin = await freshAdmin();
      const events = spread(admin.organizationId, 120, Date.now() - 60_000);
      await seedAuditEvents(t, events);
      const older: string[] = [];
      const { ids } = await allPages(t, admin, { limit: 10 }, async (pagesRead, lastPage) => {
        // A new event through the API (newer than every page read so far), a stored one in the part
        // not read yet (older than the cursor), and an event already read deleted.
        await t.createKey(admin);
        const event = auditEvent(admin.organizationId, {
          occurredAt: new Date(Date.now() - 60_000 - (pagesRead * 10 + 5) * 1000 - 500),
        });
        await seedAuditEvents(t, [event]);
        older.push(event.id);
        await t.get(DataSource).query(`DELETE FROM audit_events WHERE id = '${lastPage.audit_events[0].id}'`);
      });
      // Every event stored before the first page exactly once, in order; of those written meanwhile,
      // exactly the older ones, once each and in order; none of the newer ones.
      expect(new Set(ids).size).toBe(ids.length);
      const original = newestFirst(events);
      expect(ids.filter((id) => original.includes(id))).toEqual(original);
      expect(older.length).toBeGreaterThan(10);
      expect(ids.filter((id) => !original.includes(id))).toEqual(older);
    });
  });

  describe('cursors', () => {
    let admin: TestUser;
    let cursor: string;
    beforeAll(async () => {
      admin = await freshAdmin();
      await seedAuditEvents(t, spread(admin.organizationId, 12, Date.parse('2029-03-01T00:00:00Z')));
      cursor = (await auditPage(t, admin, { limit: 5 })).next_cursor!;
      expect(cursor).toEqual(expect.any(String));
    });

    const flip = (value: string, index: number): string => {
      const bytes = Buffer.from(value, 'base64url');
      bytes[index] ^= 0x01;
      return bytes.toString('base64url');
    };

    it('continues where the page ended', async () => {
      const page = await auditPage(t, admin, { limit: 5, cursor });
      expect(page.audit_events).toHaveLength(5);
    });

    it.each([
      ['made up (random bytes of the right length)', () => Buffer.alloc(41, 7).toString('base64url')],
      ['with its time changed', () => flip(cursor, 5)],
      ['with its id changed', () => flip(cursor, 20)],
      ['with its signature changed', () => flip(cursor, 40)],
      ['with a version it never had', () => flip(cursor, 0)],
      ['cut short', () => cursor.slice(0, -2)],
      ['with something added', () => `${cursor}AA`],
      ['padded', () => `${cursor}=`],
      ['in standard base64', () => Buffer.from(cursor, 'base64url').toString('base64')],
    ])('refuses a cursor %s with 400', async (_name, make) => {
      const response = await t
        .http()
        .get('/v1/audit-events')
        .query({ limit: 5, cursor: make() })
        .set(bearer(admin.token));
      expectInvalidArgument(response, 'page_cursor_invalid');
    });

    it('refuses the cursor with other filters than the list it came from (400)', async () => {
      for (const query of [
        { action: 'api_key.created' },
        { actor_user_id: admin.userId },
        { target_id: randomUUID() },
        { since: '2000-01-01T00:00:00Z' },
        { until: '2100-01-01T00:00:00Z' },
      ]) {
        const response = await t
          .http()
          .get('/v1/audit-events')
          .query({ ...query, cursor })
          .set(bearer(admin.token));
        expectInvalidArgument(response, 'page_cursor_invalid');
      }
    });

    it("refuses another organization's cursor (400), even for an admin there", async () => {
      const other = await freshAdmin();
      await seedAuditEvents(t, spread(other.organizationId, 12, Date.parse('2029-03-01T00:00:00Z')));
      const response = await t.http().get('/v1/audit-events').query({ limit: 5, cursor }).set(bearer(other.token));
      expectInvalidArgument(response, 'page_cursor_invalid');
      // The same cursor still works for the organization it was issued to.
      await auditPage(t, admin, { limit: 5, cursor });
    });

    it('works on another instance sharing the secrets and the database', async () => {
      const second = await createTestApp({ database: t.database });
      try {
        const response = await second
          .http()
          .get('/v1/audit-events')
          .query({ limit: 5, cursor })
          .set(bearer(admin.token));
        expect(response.status).toBe(200);
        expect(response.body.audit_events).toHaveLength(5);
      } finally {
        await second.close();
      }
    });
  });

  if (DATABASE_KIND === 'postgres') {
    it('pages exactly through events stored with microseconds (PostgreSQL keeps them)', async () => {
      const admin = await freshAdmin();
      const dataSource = t.get(DataSource);
      // 40 events within two milliseconds, written by SQL with microsecond times.
      await dataSource.query(
        `INSERT INTO audit_events (id, occurred_at, action, organization_id)
         SELECT gen_random_uuid(), timestamptz '2029-05-05 00:00:00.001+00' + (i % 8) * interval '1 microsecond'
           + (i % 2) * interval '1 millisecond', 'api_key.created', $1
         FROM generate_series(1, 40) AS i`,
        [admin.organizationId],
      );
      const expected = (
        await dataSource.query<Array<{ id: string }>>(
          'SELECT id FROM audit_events WHERE organization_id = $1 ORDER BY occurred_at DESC, id DESC',
          [admin.organizationId],
        )
      ).map((row) => row.id);
      const { ids } = await allPages(t, admin, { limit: 3 });
      expect(ids).toEqual(expected);
    });
  }
});
