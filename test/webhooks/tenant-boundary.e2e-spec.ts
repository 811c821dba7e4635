import { performance } from 'node:perf_hooks';
import { DataSource } from 'typeorm';
import { AuditService } from '../../src/audit/audit.service';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher';
import { outboxEvent, TEST_EVENT } from '../../src/webhooks/webhook-events';
import { WebhookOutbox } from '../../src/webhooks/webhook-outbox';
import { bearer, expectError, ISO_MS } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { waitFor } from '../support/wait';
import { Receiver } from './receiver';

/**
 * The tenant boundary of webhook delivery (docs/webhooks.md#limits, docs/adr/0045-fair-webhook-delivery.md): one
 * organization's dead endpoints and queued deliveries do not hold up another's; test deliveries are limited; an
 * endpoint's outbox is bounded; an endpoint that keeps failing is disabled, and an admin enables it again.
 */
const ROUTE = '/v1/organization/webhooks';
/** Nothing listens there: every attempt is refused at once, and the delivery waits for its retry. */
const CLOSED = 'http://127.0.0.1:9/hooks';

async function addEndpoint(t: TestApp, admin: TestUser, url: string, events = ['api_key.created']) {
  const { body } = await t.http().post(ROUTE).set(bearer(admin.token)).send({ url, events }).expect(201);
  return body.webhook as { id: string; secret: string };
}

/** `count` test events for each endpoint, written to the outbox at once (as a burst of changes would). */
async function queueTests(t: TestApp, organizationId: string, webhookIds: readonly string[], count: number) {
  const base = Date.now();
  const events = webhookIds.flatMap((webhookId) =>
    Array.from({ length: count }, (_, i) =>
      outboxEvent(
        TEST_EVENT,
        organizationId,
        new Date(base + i),
        { organization_id: organizationId, webhook_id: webhookId },
        { dedupeKey: null, webhookId },
      ),
    ),
  );
  return t.get(WebhookOutbox).write(events, undefined);
}

/** The endpoints' pending deliveries; `untried`: only those not attempted yet. */
async function pendingOf(t: TestApp, webhookIds: readonly string[], untried = false): Promise<number> {
  const rows: Array<{ webhook_id: string; attempts: number | string }> = await t
    .get(DataSource)
    .query(`SELECT webhook_id, attempts FROM webhook_deliveries WHERE status = 'pending'`);
  return rows.filter((row) => webhookIds.includes(row.webhook_id) && (!untried || Number(row.attempts) === 0)).length;
}

describe(`one organization's dead endpoints and another's deliveries, on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let hanging: Receiver;
  let receiver: Receiver;

  beforeAll(async () => {
    // A short time-out keeps the suite short; the delay without fairness is the backlog times it all the same.
    t = await createTestApp({ env: { WEBHOOK_TIMEOUT_MS: '2000' } });
    hanging = await Receiver.start();
    hanging.answer([], 'hang');
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await t.close();
    await hanging.close();
    await receiver.close();
  });

  it("another organization's event arrives within seconds while 10 hanging endpoints hold 300 deliveries", async () => {
    const attacker = await t.user({ org: 'hangs', role: 'admin' });
    const victim = await t.user({ org: 'waits', role: 'admin' });
    const endpoints: string[] = [];
    for (let i = 0; i < 10; i += 1) endpoints.push((await addEndpoint(t, attacker, hanging.url)).id);
    const mine = await addEndpoint(t, victim, receiver.url);
    receiver.secret = mine.secret;
    await queueTests(t, attacker.organizationId, endpoints, 30);
    // The attacker's attempts are under way (each hangs until the time-out).
    await waitFor("4 of the attacker's attempts under way", () => hanging.requests >= 4);

    const started = performance.now();
    const key = await t.createKey(victim, 'must not wait');
    // Generous for a busy 2-core machine: without fairness it waits for the 300 deliveries ahead of it, 8 at a time
    // for 2 s each (about 75 s).
    const [received] = await receiver.waitFor(1, 15_000);
    const latencyMs = performance.now() - started;
    expect(received.payload).toMatchObject({ type: 'api_key.created', data: { api_key_id: key.id } });
    expect(latencyMs).toBeLessThan(15_000);
    // It did not wait for the backlog: most of the attacker's deliveries have not been attempted yet.
    expect(await pendingOf(t, endpoints, true)).toBeGreaterThan(250);
    // Eleven endpoints and 300 deliveries written before the clock starts: more than the 5 s default on a busy machine.
  }, 60_000);
});

describe(`webhook limits on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await createTestApp({
      env: {
        WEBHOOK_TIMEOUT_MS: '1000',
        // Retries come when a test asks for them (dispatcher.run), not on their own.
        WEBHOOK_POLL_INTERVAL_MS: '60000',
        WEBHOOK_TESTS_PER_MINUTE: '3',
        WEBHOOK_MAX_PENDING_PER_ENDPOINT: '5',
        WEBHOOK_DISABLE_AFTER_FAILURES: '3',
      },
    });
    receiver = await Receiver.start();
  });
  afterAll(async () => {
    await t.close();
    await receiver.close();
  });

  async function log(admin: TestUser, webhookId: string) {
    const response = await t
      .http()
      .get(`${ROUTE}/${webhookId}/deliveries`)
      .query({ limit: 100 })
      .set(bearer(admin.token));
    expect(response.status).toBe(200);
    return response.body.deliveries as Array<Record<string, unknown>>;
  }

  async function endpoint(admin: TestUser, webhookId: string) {
    const { body } = await t.http().get(ROUTE).set(bearer(admin.token)).expect(200);
    return (body.webhooks as Array<Record<string, unknown>>).find((webhook) => webhook.id === webhookId)!;
  }

  it('test deliveries: 3 a minute per organization, then 429 with Retry-After, and nothing written', async () => {
    const admin = await t.user({ org: 'tests-limited', role: 'admin' });
    const other = await t.user({ org: 'tests-elsewhere', role: 'admin' });
    const webhook = await addEndpoint(t, admin, CLOSED);
    const second = await addEndpoint(t, admin, CLOSED);
    const theirs = await addEndpoint(t, other, CLOSED);
    for (const id of [webhook.id, second.id, webhook.id]) {
      await t.http().post(`${ROUTE}/${id}/test`).set(bearer(admin.token)).expect(202);
    }
    // Per organization: another endpoint of the same organization is refused as well.
    for (const id of [webhook.id, second.id]) {
      const refused = await t.http().post(`${ROUTE}/${id}/test`).set(bearer(admin.token));
      expectError(refused, 429, 'RESOURCE_EXHAUSTED', 'too many requests', 'too_many_webhook_tests');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
    }
    expect((await log(admin, webhook.id)).length + (await log(admin, second.id)).length).toBe(3);
    // Another organization has its own.
    await t.http().post(`${ROUTE}/${theirs.id}/test`).set(bearer(other.token)).expect(202);
  });

  it('an endpoint keeps 5 pending deliveries: the oldest are dropped, and the log says so', async () => {
    const admin = await t.user({ org: 'outbox-bound', role: 'admin' });
    const webhook = await addEndpoint(t, admin, CLOSED);
    // Nothing is attempted meanwhile: every delivery stays pending until the bound drops it.
    const wake = jest.spyOn(t.get(WebhookDispatcher), 'wake').mockImplementation(() => undefined);
    const written = await queueTests(t, admin.organizationId, [webhook.id], 8);
    expect(written).toHaveLength(8);
    const deliveries = await log(admin, webhook.id);
    expect(deliveries).toHaveLength(8);
    // Newest first: the 5 newest are kept, the 3 oldest dropped.
    expect(deliveries.slice(0, 5).map((d) => d.last_error)).not.toContain('dropped: too many pending deliveries');
    expect(deliveries.slice(5)).toEqual(
      Array.from({ length: 3 }, () =>
        expect.objectContaining({
          status: 'failed',
          attempts: 0,
          last_error: 'dropped: too many pending deliveries',
          next_attempt_at: null,
        }),
      ),
    );
    expect(await pendingOf(t, [webhook.id])).toBe(5);
    await queueTests(t, admin.organizationId, [webhook.id], 4);
    expect(await pendingOf(t, [webhook.id])).toBe(5);
    const after = await log(admin, webhook.id);
    expect(after.filter((d) => d.last_error === 'dropped: too many pending deliveries')).toHaveLength(7);
    expect(after.slice(0, 5).every((d) => d.status === 'pending')).toBe(true);
    wake.mockRestore();
  });

  it('disabled after 3 failed attempts in a row: audited, shown, sent nothing; enabled again, it gets what waited', async () => {
    const admin = await t.user({ org: 'keeps-failing', role: 'admin' });
    const webhook = await addEndpoint(t, admin, receiver.url);
    receiver.secret = webhook.secret;
    receiver.answer([], 500);
    await queueTests(t, admin.organizationId, [webhook.id], 4);
    await waitFor('the endpoint disabled', async () => (await endpoint(admin, webhook.id)).status === 'disabled');
    expect(await endpoint(admin, webhook.id)).toMatchObject({
      status: 'disabled',
      disabled_at: expect.stringMatching(ISO_MS),
    });
    const audit = (await t.get(AuditService).list(admin.organizationId)).filter((e) => e.targetId === webhook.id);
    expect(audit.map((e) => [e.action, e.targetType, e.actorUserId, e.reason])).toEqual([
      ['webhook.disabled', 'webhook', null, 'consecutive_failures'],
      ['webhook.created', 'webhook', admin.userId, null],
    ]);
    // Attempts in flight when it was disabled end; then nothing is sent to it.
    await waitFor('the attempts in flight ended', async () =>
      (await log(admin, webhook.id)).every((d) => d.status !== 'pending' || d.next_attempt_at === null),
    );
    const requests = receiver.requests;
    expect(requests).toBeGreaterThanOrEqual(3);
    // A new event is not written for it, and a test is refused.
    await t.createKey(admin, 'while disabled');
    expect(await log(admin, webhook.id)).toHaveLength(4);
    expectError(
      await t.http().post(`${ROUTE}/${webhook.id}/test`).set(bearer(admin.token)),
      400,
      'FAILED_PRECONDITION',
      'webhook is disabled',
      'webhook_disabled',
    );
    expect(receiver.requests).toBe(requests);

    receiver.answer([], 204);
    const enabled = await t.http().post(`${ROUTE}/${webhook.id}/enable`).set(bearer(admin.token)).expect(200);
    expect(enabled.body.webhook).toMatchObject({ id: webhook.id, status: 'active', disabled_at: null });
    // What waited is sent at once, and new events reach it again.
    await waitFor('what waited delivered', async () =>
      (await log(admin, webhook.id)).every((d) => d.status === 'succeeded'),
    );
    const key = await t.createKey(admin, 'enabled again');
    await waitFor('the new event delivered', () => receiver.received.some((r) => r.payload.data.api_key_id === key.id));
    const actions = (await t.get(AuditService).list(admin.organizationId)).filter((e) => e.targetId === webhook.id);
    expect(actions.map((e) => [e.action, e.actorUserId])[0]).toEqual(['webhook.enabled', admin.userId]);
    // Enabling an active endpoint changes nothing and records nothing.
    const entries = (await t.get(AuditService).list(admin.organizationId)).length;
    const again = await t.http().post(`${ROUTE}/${webhook.id}/enable`).set(bearer(admin.token)).expect(200);
    expect(again.body.webhook).toEqual(enabled.body.webhook);
    expect(await t.get(AuditService).list(admin.organizationId)).toHaveLength(entries);
    // Another organization's endpoint: 404, whether it is disabled or not.
    const stranger = await t.user({ org: 'keeps-failing-elsewhere', role: 'admin' });
    expectError(
      await t.http().post(`${ROUTE}/${webhook.id}/enable`).set(bearer(stranger.token)),
      404,
      'NOT_FOUND',
      'webhook not found',
      'webhook_not_found',
    );
  }, 30_000);
});
