import { randomUUID } from 'node:crypto';
import { AuditEvent } from '../../src/audit/audit-event.entity';
import { allPages, auditEvent, auditPage, seedAuditEvents } from '../support/audit-events';
import { bearer, expectInvalidArgument } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

/**
 * GET /v1/audit-events?actor_email=…: the actor named by e-mail address, as the organization key list's `email`
 * (docs/api.md#audit-events). actor_user_id keeps its contract (a UUID, else 400).
 */
describe(`GET /v1/audit-events by actor e-mail on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  let member: TestUser;
  let outsider: TestUser;
  let events: AuditEvent[];
  const base = Date.parse('2029-07-01T12:00:00.000Z');

  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.user({ org: 'audit-actor-email', role: 'admin' });
    member = await t.user({ org: 'audit-actor-email', role: 'member', email: `Member-${randomUUID()}@Example.com` });
    // A user of another organization: their events there are never listed here.
    outsider = await t.user({ org: 'audit-actor-email-elsewhere', role: 'admin' });
    const actors = [member.userId, admin.userId, null];
    events = Array.from({ length: 15 }, (_, i) =>
      auditEvent(admin.organizationId, {
        occurredAt: new Date(base - i * 60_000),
        action: i % 2 === 0 ? 'api_key.created' : 'console.signed_in',
        actorUserId: actors[i % 3],
      }),
    );
    await seedAuditEvents(t, [
      ...events,
      auditEvent(outsider.organizationId, { occurredAt: new Date(base), actorUserId: outsider.userId }),
    ]);
  });
  afterAll(() => t.close());

  const idsBy = (actor: string | null) =>
    events.filter((event) => event.actorUserId === actor).map((event) => event.id);

  it('lists the events of the user with that address, in any letter case, page after page', async () => {
    const { ids, pages } = await allPages(t, admin, { actor_email: member.email.toUpperCase(), limit: 2 });
    expect(ids).toEqual(idsBy(member.userId));
    expect(pages.length).toBe(3);
    const byId = await allPages(t, admin, { actor_user_id: member.userId, limit: 2 });
    expect(byId.ids).toEqual(ids);
  });

  it('with actor_user_id of the same user, the same; of another user, nothing', async () => {
    const same = await auditPage(t, admin, { actor_email: member.email, actor_user_id: member.userId });
    expect(same.audit_events.map((event) => event.id)).toEqual(idsBy(member.userId));
    const other = await auditPage(t, admin, { actor_email: member.email, actor_user_id: admin.userId });
    expect(other).toEqual({ audit_events: [], next_cursor: null });
  });

  it("an address nobody has, or a user of another organization only: an empty page (never the other's events)", async () => {
    expect(await auditPage(t, admin, { actor_email: 'nobody@example.com' })).toEqual({
      audit_events: [],
      next_cursor: null,
    });
    expect(await auditPage(t, admin, { actor_email: outsider.email })).toEqual({ audit_events: [], next_cursor: null });
  });

  it('combines with the other filters, and the cursor is bound to the actor it names', async () => {
    const page = await auditPage(t, admin, { actor_email: member.email, action: 'console.signed_in', limit: 1 });
    const expected = events
      .filter((event) => event.actorUserId === member.userId && event.action === 'console.signed_in')
      .map((event) => event.id);
    expect(page.audit_events.map((event) => event.id)).toEqual(expected.slice(0, 1));
    expect(page.next_cursor).toEqual(expect.any(String));
    // The same list named by id continues; another actor's list refuses the cursor.
    const next = await auditPage(t, admin, {
      actor_user_id: member.userId,
      action: 'console.signed_in',
      limit: 1,
      cursor: page.next_cursor!,
    });
    expect(next.audit_events.map((event) => event.id)).toEqual(expected.slice(1, 2));
    for (const actor_email of [admin.email, 'nobody@example.com']) {
      expectInvalidArgument(
        await t
          .http()
          .get('/v1/audit-events')
          .query({ actor_email, action: 'console.signed_in', limit: 1, cursor: page.next_cursor! })
          .set(bearer(admin.token)),
        'page_cursor_invalid',
      );
    }
  });

  it.each([
    ['not an address', 'actor_email=member'],
    ['an empty address', 'actor_email='],
    ['an address with a space', 'actor_email=a%20b@example.com'],
    ['an address too long', `actor_email=${'a'.repeat(310)}@example.com`],
    ['a repeated address', 'actor_email=a@example.com&actor_email=b@example.com'],
    ['a forged cursor with an unknown address', 'actor_email=nobody@example.com&cursor=forged'],
  ])('refuses %s with 400', async (_name, query) => {
    const reason = query.includes('cursor=') ? 'page_cursor_invalid' : 'invalid_argument';
    expectInvalidArgument(await t.http().get(`/v1/audit-events?${query}`).set(bearer(admin.token)), reason);
  });

  it('still refuses an e-mail address as actor_user_id (a UUID only)', async () => {
    expectInvalidArgument(
      await t.http().get('/v1/audit-events').query({ actor_user_id: member.email }).set(bearer(admin.token)),
    );
  });

  it('needs audit:read like the rest of the list', async () => {
    const response = await t
      .http()
      .get('/v1/audit-events')
      .query({ actor_email: admin.email })
      .set(bearer(member.token));
    expect(response.status).toBe(403);
  });
});
