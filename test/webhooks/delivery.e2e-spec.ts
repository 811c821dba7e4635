import { DataSource } from 'typeorm';
import { MembersService } from '../../src/members/members.service';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher';
import { duringAuditFailure } from '../support/audit-failure';
import { freezeDate } from '../support/clock';
import { rowCount } from '../support/row-counts';
import { bearer, ISO_MS, UUID } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { waitFor } from '../support/wait';
import { Receiver } from './receiver';

/**
 * Delivery (docs/webhooks.md): every key event reaches the endpoint signed as Standard Webhooks specifies (verified by
 * the standardwebhooks library, not by Gatehouse's signer), written in the change's transaction; an endpoint that
 * answers 500 or hangs is retried with backoff until it answers 2xx, and the delivery log says what happened.
 */
const ROUTE = '/v1/organization/webhooks';
const ALL_EVENTS = ['api_key.created', 'api_key.revoked', 'api_key.expiring', 'api_key.exposed', 'member.removed'];

describe(`webhook delivery on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  let receiver: Receiver;
  let webhookId: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { EXPOSED_REPORT_MIN_RESPONSE_MS: '0', WEBHOOK_TIMEOUT_MS: '1000' } });
    admin = await t.user({ org: 'deliveries', role: 'admin', ttl: 7 * 86400 });
    receiver = await Receiver.start();
    const { body } = await t
      .http()
      .post(ROUTE)
      .set(bearer(admin.token))
      .send({ url: receiver.url, events: ALL_EVENTS })
      .expect(201);
    webhookId = body.webhook.id;
    receiver.secret = body.webhook.secret;
  });
  afterAll(async () => {
    jest.useRealTimers();
    await t.close();
    await receiver.close();
  });
  afterEach(() => {
    expect(receiver.refused).toEqual([]);
    jest.useRealTimers();
  });

  /** The events received since `from`, once `count` have arrived. */
  async function next(from: number, count: number) {
    const received = await receiver.waitFor(from + count);
    return received.slice(from).map((r) => ({ id: r.id, ...r.payload }));
  }

  async function log(limit = 100) {
    const response = await t.http().get(`${ROUTE}/${webhookId}/deliveries`).query({ limit }).set(bearer(admin.token));
    expect(response.status).toBe(200);
    return response.body as { deliveries: Array<Record<string, unknown>>; total_count: number };
  }

  it('a key created, then revoked: two signed events with their data', async () => {
    const from = receiver.received.length;
    const key = await t.createKey(admin, 'hooked');
    await t.http().delete(`/v1/user-api-keys/${key.id}`).set(bearer(admin.token)).expect(200);
    // Endpoints get no order guarantee (docs/webhooks.md#retries): find each by its type.
    const events = await next(from, 2);
    const created = events.find((e) => e.type === 'api_key.created')!;
    const revoked = events.find((e) => e.type === 'api_key.revoked')!;
    expect(created).toEqual({
      id: expect.stringMatching(UUID),
      type: 'api_key.created',
      timestamp: expect.stringMatching(ISO_MS),
      data: {
        organization_id: admin.organizationId,
        api_key_id: key.id,
        user_id: admin.userId,
        previous_api_key_id: null,
      },
    });
    expect(revoked).toEqual({
      id: expect.stringMatching(UUID),
      type: 'api_key.revoked',
      timestamp: expect.stringMatching(ISO_MS),
      data: {
        organization_id: admin.organizationId,
        api_key_id: key.id,
        reason: 'user',
        actor_user_id: admin.userId,
        effective_at: revoked.timestamp,
      },
    });
    // The body carries no secret, and the headers are exactly Standard Webhooks'.
    const request = receiver.received.find((r) => r.id === created.id)!;
    expect(request.body).not.toContain(key.value);
    expect(request.body).not.toContain(receiver.secret!.slice('whsec_'.length));
    expect(request.headers['content-type']).toBe('application/json');
    expect(request.headers['webhook-signature']).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(Number(request.timestamp)).toBeCloseTo(Date.now() / 1000, -1);

    // The receiver has both; the dispatcher writes each success just after the answer.
    const { deliveries } = await waitFor('both deliveries marked succeeded', async () => {
      const page = await log(2);
      return page.deliveries.length === 2 && page.deliveries.every((d) => d.status === 'succeeded') ? page : undefined;
    });
    expect(deliveries[0]).toEqual({
      id: expect.stringMatching(UUID),
      event_id: revoked.id,
      event_type: 'api_key.revoked',
      status: 'succeeded',
      attempts: 1,
      last_response_status: 204,
      last_error: null,
      next_attempt_at: null,
      last_attempt_at: expect.stringMatching(ISO_MS),
      created_at: expect.stringMatching(ISO_MS),
      resent_from: null,
    });
  });

  it('an exposed key: api_key.exposed and api_key.revoked with reason exposed', async () => {
    const from = receiver.received.length;
    const key = await t.createKey(admin, 'leaked');
    await t
      .http()
      .post('/v1/api-keys/exposed')
      .send({ keys: [key.value] })
      .expect(202);
    const events = await next(from, 3);
    expect(events.map((e) => [e.type, e.data.api_key_id, e.data.reason]).sort()).toEqual([
      ['api_key.created', key.id, undefined],
      ['api_key.exposed', key.id, undefined],
      ['api_key.revoked', key.id, 'exposed'],
    ]);
    expect(events.find((e) => e.type === 'api_key.revoked')!.data.actor_user_id).toBeNull();
  });

  it('revocations of every cause: admin, rotation (at once and at the end of a grace), member removal', async () => {
    const member = await t.user({ org: 'deliveries', role: 'member' });
    const before = receiver.received.length;
    const byAdmin = await t.createKey(member, 'admin revokes');
    const rotated = await t.createKey(admin, 'rotated now', { scopes: ['api_keys:create', 'api_keys:revoke'] });
    const graced = await t.createKey(admin, 'rotated with grace', { scopes: ['api_keys:create', 'api_keys:revoke'] });
    const removed = await t.createKey(member, 'member leaves');
    await receiver.waitFor(before + 4);
    const from = receiver.received.length;
    await t.http().delete(`/v1/organization/api-keys/${byAdmin.id}`).set(bearer(admin.token)).expect(200);
    const now = await t
      .http()
      .post(`/v1/user-api-keys/${rotated.id}/rotate`)
      .set(bearer(admin.token))
      .send({ grace_period_seconds: 0 })
      .expect(201);
    const later = await t
      .http()
      .post(`/v1/user-api-keys/${graced.id}/rotate`)
      .set(bearer(admin.token))
      .send({ grace_period_seconds: 3600 })
      .expect(201);
    await t.get(MembersService).remove(member.organizationId, member.userId);
    const events = await next(from, 7);
    const of = (id: string) => events.filter((e) => (e.data.api_key_id ?? e.data.user_id) === id);
    expect(events.map((e) => [e.type, e.data.api_key_id ?? e.data.user_id, e.data.reason ?? null]).sort()).toEqual(
      [
        ['api_key.revoked', byAdmin.id, 'admin'],
        ['api_key.created', now.body.api_key.id, null],
        ['api_key.revoked', rotated.id, 'rotated'],
        ['api_key.created', later.body.api_key.id, null],
        ['api_key.revoked', graced.id, 'rotated'],
        ['api_key.revoked', removed.id, 'member_removed'],
        ['member.removed', member.userId, null],
      ].sort(),
    );
    expect(of(now.body.api_key.id)[0].data.previous_api_key_id).toBe(rotated.id);
    // The grace's end is when the old key stops working.
    expect(of(graced.id)[0].data.effective_at).toBe(later.body.previous_api_key.expires_at);
    expect(of(byAdmin.id)[0].data.actor_user_id).toBe(admin.userId);
    expect(of(removed.id)[0].data.actor_user_id).toBeNull();
  });

  it('an endpoint that answers 500 gets the event again, and then again until it answers 2xx', async () => {
    const start = Date.now();
    freezeDate(start);
    receiver.answer([500, 503]);
    const from = receiver.received.length;
    const key = await t.createKey(admin, 'retried');
    await receiver.waitFor(from + 1);
    await waitFor('the first attempt logged', async () => (await log(1)).deliveries[0].attempts === 1);
    const first = (await log(1)).deliveries[0];
    expect(first).toMatchObject({ status: 'pending', attempts: 1, last_response_status: 500, last_error: null });
    // The first retry waits 5-10 s.
    const retryAt = Date.parse(first.next_attempt_at as string);
    expect(retryAt - start).toBeGreaterThanOrEqual(5_000);
    expect(retryAt - start).toBeLessThanOrEqual(10_000);

    await t.get(WebhookDispatcher).run();
    expect(receiver.received.length).toBe(from + 1);
    jest.setSystemTime(retryAt);
    await t.get(WebhookDispatcher).run();
    await waitFor('the second attempt logged', async () => (await log(1)).deliveries[0].attempts === 2);
    expect((await log(1)).deliveries[0]).toMatchObject({ status: 'pending', attempts: 2, last_response_status: 503 });

    jest.setSystemTime(start + 60_000);
    await t.get(WebhookDispatcher).run();
    const attempts = await receiver.waitFor(from + 3);
    // The same event every time: one webhook-id, one body, each attempt signed at its own time.
    expect(new Set(attempts.slice(from).map((r) => r.id)).size).toBe(1);
    expect(new Set(attempts.slice(from).map((r) => r.body)).size).toBe(1);
    expect(attempts[from].payload.data.api_key_id).toBe(key.id);
    await waitFor('the delivery succeeded', async () => (await log(1)).deliveries[0].status === 'succeeded');
    expect((await log(1)).deliveries[0]).toMatchObject({
      status: 'succeeded',
      attempts: 3,
      last_response_status: 204,
      next_attempt_at: null,
    });
  });

  it('an endpoint that hangs: the attempt times out, is recorded, and the event comes again', async () => {
    const start = Date.now();
    freezeDate(start);
    receiver.answer(['hang']);
    const from = receiver.received.length;
    const key = await t.createKey(admin, 'slow receiver');
    await receiver.waitFor(from + 1);
    await waitFor('the first attempt logged', async () => (await log(1)).deliveries[0].attempts === 1, {
      timeoutMs: 5_000,
    });
    expect((await log(1)).deliveries[0]).toMatchObject({
      status: 'pending',
      attempts: 1,
      last_response_status: null,
      last_error: 'timeout',
    });
    jest.setSystemTime(start + 60_000);
    await t.get(WebhookDispatcher).run();
    const [, again] = (await receiver.waitFor(from + 2)).slice(from);
    expect(again.payload.data.api_key_id).toBe(key.id);
    await waitFor('the delivery succeeded', async () => (await log(1)).deliveries[0].status === 'succeeded');
    expect((await log(1)).deliveries[0]).toMatchObject({ attempts: 2, last_response_status: 204, last_error: null });
  });

  it('gives up after 24 hours: the delivery is failed and never sent again', async () => {
    const start = Date.now();
    freezeDate(start);
    receiver.answer([], 500);
    const from = receiver.requests;
    await t.createKey(admin, 'never answered');
    await waitFor('the first attempt logged', async () => (await log(1)).deliveries[0].attempts === 1);
    let at = start;
    while ((await log(1)).deliveries[0].status === 'pending') {
      at = Date.parse((await log(1)).deliveries[0].next_attempt_at as string);
      jest.setSystemTime(at);
      await t.get(WebhookDispatcher).run();
    }
    const failed = (await log(1)).deliveries[0];
    expect(failed).toMatchObject({ status: 'failed', last_response_status: 500, next_attempt_at: null });
    expect(at - start).toBeLessThanOrEqual(24 * 3600_000);
    expect(failed.attempts).toBe(receiver.requests - from);
    expect(failed.attempts).toBeGreaterThan(15);
    jest.setSystemTime(start + 48 * 3600_000);
    await t.get(WebhookDispatcher).run();
    expect(receiver.requests - from).toBe(failed.attempts);
    receiver.answer([]);
  });

  it('a test delivery goes to this endpoint only, at once', async () => {
    const other = await Receiver.start();
    try {
      const { body } = await t
        .http()
        .post(ROUTE)
        .set(bearer(admin.token))
        .send({ url: other.url, events: ['member.removed'] })
        .expect(201);
      other.secret = body.webhook.secret;
      const response = await t.http().post(`${ROUTE}/${body.webhook.id}/test`).set(bearer(admin.token)).expect(202);
      expect(response.body.delivery).toMatchObject({
        event_type: 'webhook.test',
        event_id: expect.stringMatching(UUID),
      });
      const [received] = await other.waitFor(1);
      expect(received.payload).toEqual({
        type: 'webhook.test',
        timestamp: expect.stringMatching(ISO_MS),
        data: { organization_id: admin.organizationId, webhook_id: body.webhook.id },
      });
      expect(received.id).toBe(response.body.delivery.event_id);
      await t.http().delete(`${ROUTE}/${body.webhook.id}`).set(bearer(admin.token)).expect(200);
    } finally {
      await other.close();
    }
  });

  it('an endpoint receives only the events it subscribes to, of its own organization', async () => {
    const other = await Receiver.start();
    const elsewhere = await t.user({ org: 'deliveries-elsewhere', role: 'admin' });
    try {
      const { body } = await t
        .http()
        .post(ROUTE)
        .set(bearer(admin.token))
        .send({ url: other.url, events: ['api_key.revoked'] })
        .expect(201);
      other.secret = body.webhook.secret;
      const from = receiver.received.length;
      const mine = await t.createKey(admin, 'mine');
      await t.createKey(elsewhere, 'theirs');
      await t.http().delete(`/v1/user-api-keys/${mine.id}`).set(bearer(admin.token)).expect(200);
      const [revoked] = await other.waitFor(1);
      expect(revoked.payload.type).toBe('api_key.revoked');
      await next(from, 2);
      await t.get(WebhookDispatcher).run();
      expect(other.received).toHaveLength(1);
      expect(
        receiver.received
          .slice(from)
          .map((r) => [r.payload.type, r.payload.data.api_key_id])
          .sort(),
      ).toEqual([
        ['api_key.created', mine.id],
        ['api_key.revoked', mine.id],
      ]);
      await t.http().delete(`${ROUTE}/${body.webhook.id}`).set(bearer(admin.token)).expect(200);
    } finally {
      await other.close();
    }
  });

  /** Makes every insert into webhook_events fail inside its transaction (the outbox's write); returns the undo. */
  async function failWebhookEvents(): Promise<() => Promise<void>> {
    const dataSource = t.get(DataSource);
    if (DATABASE_KIND === 'sqlite') {
      await dataSource.query(
        "CREATE TRIGGER webhooks_refuse BEFORE INSERT ON webhook_events BEGIN SELECT RAISE(ABORT, 'refused'); END",
      );
      return async () => void (await dataSource.query('DROP TRIGGER webhooks_refuse'));
    }
    await dataSource.query(
      `CREATE OR REPLACE FUNCTION webhooks_refuse() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RAISE EXCEPTION 'refused'; END $$;
       CREATE TRIGGER webhooks_refuse BEFORE INSERT ON webhook_events FOR EACH ROW EXECUTE FUNCTION webhooks_refuse()`,
    );
    return async () => void (await dataSource.query('DROP TRIGGER webhooks_refuse ON webhook_events'));
  }

  it("is written in the change's transaction: no event without its change, no change without its event", async () => {
    const dataSource = t.get(DataSource);
    const count = (table: string) => rowCount(t, table);
    const tables = ['webhook_events', 'webhook_deliveries', 'api_keys', 'audit_events'];
    const before = await Promise.all(tables.map(count));
    // The audit entry fails after the key was written: neither the key nor its event is stored.
    const refused = await duringAuditFailure(dataSource, 'api_key.created', () =>
      t.http().post('/v1/user-api-keys').set(bearer(admin.token)).send({ label: 'audit fails' }),
    );
    expect(refused.status).toBe(500);
    // The outbox's insert fails: the key and its audit entry are rolled back with it.
    const allow = await failWebhookEvents();
    try {
      const response = await t
        .http()
        .post('/v1/user-api-keys')
        .set(bearer(admin.token))
        .send({ label: 'outbox fails' });
      expect(response.status).toBe(500);
    } finally {
      await allow();
    }
    expect(await Promise.all(tables.map(count))).toEqual(before);
  });

  it('the delivery log is paged like every list, newest first', async () => {
    const { deliveries, total_count } = await log(100);
    expect(total_count).toBe(deliveries.length);
    const page = await t
      .http()
      .get(`${ROUTE}/${webhookId}/deliveries`)
      .query({ page: 2, limit: 3 })
      .set(bearer(admin.token));
    expect(page.body).toEqual({ deliveries: deliveries.slice(3, 6), page: 2, limit: 3, total_count });
    const times = deliveries.map((d) => d.created_at as string);
    expect([...times].sort().reverse()).toEqual(times);
  });
});
