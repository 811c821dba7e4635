import { DataSource } from 'typeorm';
import { Webhook } from 'standardwebhooks';
import { AuditService } from '../../src/audit/audit.service';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher';
import { WebhookScheduler } from '../../src/webhooks/webhook-scheduler';
import { MAX_RESPONSE_BYTES } from '../../src/webhooks/webhook-sender';
import { freezeDate } from '../support/clock';
import { bearer, expectError, expectInvalidArgument, ISO_MS, UUID } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { waitFor } from '../support/wait';
import { Receiver } from './receiver';

/**
 * What an admin sees of a delivery and does with it (docs/webhooks.md#the-delivery-log, #resending,
 * #rotating-the-secret): the body sent and the receiver's answer (status, a subset of its headers, the first 4 KiB of
 * its body, never a secret); a resend (a new delivery of the same event, same webhook-id, signed anew); a secret
 * rotation whose overlap signs with both secrets, verified by the standardwebhooks library with each, and after which
 * the old one is refused. Every route is the organization's: another organization's admin gets 404, a member 403.
 */
const ROUTE = '/v1/organization/webhooks';
const DAY_MS = 86_400_000;

type Delivery = Record<string, unknown> & { id: string; event_id: string; status: string };

describe(`webhook delivery details, resends and secret rotation on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  let receiver: Receiver;
  let webhookId: string;
  let secret: string;

  beforeAll(async () => {
    t = await createTestApp({ env: { WEBHOOK_TIMEOUT_MS: '2000', WEBHOOK_TESTS_PER_MINUTE: '10' } });
    admin = await t.user({ org: 'details', role: 'admin', ttl: 30 * 86400 });
    receiver = await Receiver.start();
    const { body } = await t
      .http()
      .post(ROUTE)
      .set(bearer(admin.token))
      .send({ url: receiver.url, events: ['api_key.created'] })
      .expect(201);
    webhookId = body.webhook.id;
    secret = body.webhook.secret;
    receiver.secret = secret;
  });
  afterAll(async () => {
    jest.useRealTimers();
    await t.close();
    await receiver.close();
  });
  afterEach(() => jest.useRealTimers());

  const detail = (id: string, user = admin, webhook = webhookId) =>
    t.http().get(`${ROUTE}/${webhook}/deliveries/${id}`).set(bearer(user.token));
  const resend = (id: string, user = admin, webhook = webhookId) =>
    t.http().post(`${ROUTE}/${webhook}/deliveries/${id}/resend`).set(bearer(user.token));
  const rotate = (body: object | undefined, user = admin, webhook = webhookId) => {
    const request = t.http().post(`${ROUTE}/${webhook}/rotate-secret`).set(bearer(user.token));
    return body === undefined ? request : request.send(body);
  };

  /** The delivery once its attempt is recorded (the receiver answers before the dispatcher writes the outcome). */
  async function settled(id: string, attempts = 1): Promise<Delivery> {
    return waitFor(`delivery ${id} with ${attempts} attempt(s) recorded`, async () => {
      const response = await detail(id);
      expect(response.status).toBe(200);
      const delivery = response.body.delivery as Delivery;
      return (delivery.attempts as number) >= attempts ? delivery : undefined;
    });
  }

  /** The request that carried the `api_key.created` of this key, once it came (earlier deliveries' retries aside). */
  async function arrivalOf(keyId: string): Promise<{ headers: Record<string, string>; body: string }> {
    return waitFor(`the event of key ${keyId}`, () => receiver.raw.find((request) => request.body.includes(keyId)));
  }

  /** A test delivery to the endpoint, and its id. */
  async function sendTest(): Promise<string> {
    const response = await t.http().post(`${ROUTE}/${webhookId}/test`).set(bearer(admin.token)).expect(202);
    return response.body.delivery.id as string;
  }

  it("keeps the body sent and the receiver's answer: status, a subset of its headers, its body, how long it took", async () => {
    receiver.answer([
      {
        status: 422,
        body: '{"error":"unknown event"}',
        headers: { 'content-type': 'application/json', 'x-request-id': 'rcv-42', 'set-cookie': 'session=s3cr3t' },
      },
    ]);
    const from = receiver.received.length;
    const id = await sendTest();
    const [arrived] = (await receiver.waitFor(from + 1)).slice(from);
    const delivery = await settled(id);
    expect(delivery).toEqual({
      id,
      event_id: arrived.id,
      event_type: 'webhook.test',
      status: 'pending',
      attempts: 1,
      last_response_status: 422,
      last_error: null,
      next_attempt_at: expect.stringMatching(ISO_MS),
      last_attempt_at: expect.stringMatching(ISO_MS),
      created_at: expect.stringMatching(ISO_MS),
      resent_from: null,
      // Exactly the bytes the receiver verified.
      payload: arrived.body,
      last_duration_ms: expect.any(Number),
      last_response: {
        status: 422,
        headers: { 'content-type': 'application/json', 'x-request-id': 'rcv-42', date: expect.any(String) },
        body: '{"error":"unknown event"}',
        body_truncated: false,
      },
    });
    expect(delivery.last_duration_ms as number).toBeLessThan(2000);
    // A cookie the receiver set is not kept.
    expect(JSON.stringify(delivery)).not.toContain('s3cr3t');
  });

  it('keeps the first 4 KiB of a long answer, and never a secret the receiver sends back', async () => {
    const long = `${secret} `.repeat(400);
    receiver.answer([{ status: 200, body: long, headers: { 'x-request-id': secret.slice(6, 40) } }]);
    const from = receiver.received.length;
    const id = await sendTest();
    await receiver.waitFor(from + 1);
    const delivery = await settled(id);
    const response = delivery.last_response as { body: string; body_truncated: boolean; headers: object };
    expect(delivery.status).toBe('succeeded');
    expect(response.body_truncated).toBe(true);
    expect(Buffer.byteLength(response.body)).toBeLessThanOrEqual(MAX_RESPONSE_BYTES);
    expect(response.body.startsWith('[redacted] [redacted] ')).toBe(true);
    expect(response.headers).toMatchObject({ 'x-request-id': '[redacted]' });
    const text = JSON.stringify(delivery);
    expect(text).not.toContain(secret);
    expect(text).not.toContain(secret.slice('whsec_'.length));
    // Nor in the database: what is stored is what is shown.
    const [row] = await t
      .get(DataSource)
      .query(`SELECT last_response_body, last_response_headers FROM webhook_deliveries WHERE id = '${id}'`);
    expect(JSON.stringify(row)).not.toContain(secret.slice('whsec_'.length));
  });

  it('an attempt without an answer keeps none: the error says why', async () => {
    receiver.answer(['hang']);
    const from = receiver.requests;
    const id = await sendTest();
    await waitFor('the request', () => receiver.requests > from);
    const delivery = await settled(id);
    expect(delivery).toMatchObject({ status: 'pending', last_response_status: null, last_error: 'timeout' });
    expect(delivery.last_response).toBeNull();
    expect(delivery.last_duration_ms as number).toBeGreaterThanOrEqual(1900);
  });

  it('resends a delivery: a new delivery of the same event, same body and webhook-id, signed anew', async () => {
    receiver.answer([500]);
    const from = receiver.received.length;
    const original = await sendTest();
    await receiver.waitFor(from + 1);
    const failed = await settled(original);
    const start = Date.now() + 2000;
    freezeDate(start);
    const response = await resend(original).expect(202);
    expect(response.body).toEqual({
      delivery: {
        id: expect.stringMatching(UUID),
        event_id: failed.event_id,
        event_type: 'webhook.test',
        status: 'pending',
        attempts: 0,
        last_response_status: null,
        last_error: null,
        next_attempt_at: new Date(start).toISOString(),
        last_attempt_at: null,
        created_at: new Date(start).toISOString(),
        resent_from: original,
      },
    });
    const resent = response.body.delivery.id as string;
    expect(resent).not.toBe(original);
    const [first, again] = (await receiver.waitFor(from + 2)).slice(from);
    // Standard Webhooks: the id stays the event's (the receiver's idempotency key); the timestamp is the attempt's.
    expect(again.id).toBe(first.id);
    expect(again.body).toBe(first.body);
    expect(Number(again.timestamp)).toBe(Math.floor(start / 1000));
    expect(again.headers['webhook-signature']).not.toBe(first.headers['webhook-signature']);
    expect((await settled(resent)).status).toBe('succeeded');
    // The original goes on as it was: its own retries.
    expect((await detail(original).expect(200)).body.delivery).toMatchObject({ status: 'pending', attempts: 1 });
    // Both in the log, the resend first, saying what it resends.
    const log = await t.http().get(`${ROUTE}/${webhookId}/deliveries`).set(bearer(admin.token)).expect(200);
    expect(log.body.deliveries.slice(0, 2).map((d: Delivery) => [d.id, d.resent_from])).toEqual([
      [resent, original],
      [original, null],
    ]);
  });

  it('resends and test deliveries share the per-minute limit: past it 429 with Retry-After, nothing written', async () => {
    const limited = await t.user({ org: 'details-limited', role: 'admin' });
    const other = await Receiver.start();
    try {
      const { body } = await t
        .http()
        .post(ROUTE)
        .set(bearer(limited.token))
        .send({ url: other.url, events: ['member.removed'] })
        .expect(201);
      const id = body.webhook.id as string;
      const test = await t.http().post(`${ROUTE}/${id}/test`).set(bearer(limited.token)).expect(202);
      for (let i = 0; i < 8; i += 1) await resend(test.body.delivery.id, limited, id).expect(202);
      await t.http().post(`${ROUTE}/${id}/test`).set(bearer(limited.token)).expect(202);
      const refused = await resend(test.body.delivery.id, limited, id);
      expectError(refused, 429, 'RESOURCE_EXHAUSTED', 'too many requests', 'too_many_webhook_resends');
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      const log = await t.http().get(`${ROUTE}/${id}/deliveries`).set(bearer(limited.token)).expect(200);
      expect(log.body.total_count).toBe(10);
      expectError(
        await t.http().post(`${ROUTE}/${id}/test`).set(bearer(limited.token)),
        429,
        'RESOURCE_EXHAUSTED',
        'too many requests',
        'too_many_webhook_tests',
      );
    } finally {
      await other.close();
    }
  });

  it("is the organization's: another organization's admin gets 404, a member 403, another endpoint's delivery 404", async () => {
    const id = await sendTest();
    const elsewhere = await t.user({ org: 'details-elsewhere', role: 'admin' });
    for (const request of [detail(id, elsewhere), resend(id, elsewhere), rotate({}, elsewhere)]) {
      expectError(await request, 404, 'NOT_FOUND', 'webhook not found', 'webhook_not_found');
    }
    // Their own endpoint does not open ours: the delivery is not of it.
    const theirs = await t
      .http()
      .post(ROUTE)
      .set(bearer(elsewhere.token))
      .send({ url: receiver.url, events: ['member.removed'] })
      .expect(201);
    for (const request of [
      detail(id, elsewhere, theirs.body.webhook.id),
      resend(id, elsewhere, theirs.body.webhook.id),
    ]) {
      expectError(await request, 404, 'NOT_FOUND', 'webhook delivery not found', 'webhook_delivery_not_found');
    }
    const member = await t.user({ org: 'details', role: 'member' });
    for (const request of [detail(id, member), resend(id, member), rotate({}, member)]) {
      expectError(await request, 403, 'PERMISSION_DENIED', 'insufficient permissions', 'insufficient_permissions');
    }
    expectInvalidArgument(await detail('not-a-uuid'));
    expectError(
      await detail('00000000-0000-4000-8000-000000000000'),
      404,
      'NOT_FOUND',
      'webhook delivery not found',
      'webhook_delivery_not_found',
    );
    // Upper-case ids are the same ids.
    await detail(id.toUpperCase(), admin, webhookId.toUpperCase()).expect(200);
  });

  it('rotates the secret: shown once; both sign during the overlap, then the old one is refused', async () => {
    const old = secret;
    const start = Date.now();
    freezeDate(start);
    const response = await rotate(undefined).expect(200);
    expect(response.headers['cache-control']).toBe('no-store');
    const rotated = response.body.webhook;
    const fresh = rotated.secret as string;
    expect(fresh).toMatch(/^whsec_[A-Za-z0-9+/]{32}$/);
    expect(fresh).not.toBe(old);
    expect(rotated).toMatchObject({
      id: webhookId,
      previous_secret_expires_at: new Date(start + DAY_MS).toISOString(),
    });
    // Never shown again.
    const list = await t.http().get(ROUTE).set(bearer(admin.token)).expect(200);
    expect(JSON.stringify(list.body)).not.toContain(fresh);
    expect(list.body.webhooks.find((w: { id: string }) => w.id === webhookId)).toMatchObject({
      previous_secret_expires_at: new Date(start + DAY_MS).toISOString(),
    });
    const [row] = await t
      .get(DataSource)
      .query(`SELECT secret_encrypted, previous_secret_encrypted FROM webhooks WHERE id = '${webhookId}'`);
    expect(row.previous_secret_encrypted).toMatch(/^v1:k1:/);
    expect(JSON.stringify(row)).not.toContain(fresh.slice('whsec_'.length));

    // During the overlap: two signatures; a receiver still on the old secret and one on the new both accept.
    receiver.answer([]);
    receiver.secret = old;
    const during = await t.createKey(admin, 'during the overlap');
    let request = await arrivalOf(during.id);
    expect(request.headers['webhook-signature'].split(' ')).toHaveLength(2);
    expect(new Webhook(old).verify(request.body, request.headers)).toMatchObject({ type: 'api_key.created' });
    expect(new Webhook(fresh).verify(request.body, request.headers)).toMatchObject({ type: 'api_key.created' });

    // An hour before the end, still both; past it, the new one only: the old secret's receiver refuses.
    jest.setSystemTime(start + DAY_MS - 3600_000);
    const late = await t.createKey(admin, 'late in the overlap');
    expect((await arrivalOf(late.id)).headers['webhook-signature'].split(' ')).toHaveLength(2);
    jest.setSystemTime(start + DAY_MS + 1000);
    const after = await t.createKey(admin, 'after the overlap');
    request = await arrivalOf(after.id);
    expect(request.headers['webhook-signature'].split(' ')).toHaveLength(1);
    expect(() => new Webhook(old).verify(request.body, request.headers)).toThrow();
    expect(new Webhook(fresh).verify(request.body, request.headers)).toMatchObject({ type: 'api_key.created' });
    const refused = await waitFor('the refusal recorded', async () => {
      const log = await t.http().get(`${ROUTE}/${webhookId}/deliveries`).query({ limit: 1 }).set(bearer(admin.token));
      const [latest] = log.body.deliveries as Delivery[];
      return latest.attempts === 1 ? latest : undefined;
    });
    expect(refused).toMatchObject({ event_type: 'api_key.created', status: 'pending', last_response_status: 400 });
    // The receiver moves to the new secret: the refused event comes again, and is accepted.
    receiver.secret = fresh;
    secret = fresh;
    jest.setSystemTime(Date.parse(refused.next_attempt_at as string));
    await t.get(WebhookDispatcher).run();
    await waitFor('the event accepted', () => receiver.received.some((received) => received.body.includes(after.id)));

    // The overlap's end is shown no more, and the scheduler forgets the old secret.
    const listed = await t.http().get(ROUTE).set(bearer(admin.token)).expect(200);
    expect(listed.body.webhooks.find((w: { id: string }) => w.id === webhookId).previous_secret_expires_at).toBeNull();
    await t.get(WebhookScheduler).run();
    const [cleared] = await t
      .get(DataSource)
      .query(`SELECT previous_secret_encrypted, previous_secret_expires_at FROM webhooks WHERE id = '${webhookId}'`);
    expect(cleared).toEqual({ previous_secret_encrypted: null, previous_secret_expires_at: null });

    // Audited with the overlap's end, never a secret.
    const [entry] = (await t.get(AuditService).list(admin.organizationId)).filter(
      (e) => e.action === 'webhook.secret_rotated',
    );
    expect(entry).toMatchObject({
      actorUserId: admin.userId,
      targetType: 'webhook',
      targetId: webhookId,
      changes: { previous_secret_expires_at: { before: null, after: new Date(start + DAY_MS).toISOString() } },
    });
    expect(JSON.stringify(entry)).not.toMatch(/whsec_/);
  });

  it('an overlap of 0 drops the old secret at once; a bad overlap is 400 and changes nothing', async () => {
    for (const body of [{ overlap_seconds: -1 }, { overlap_seconds: 604_801 }, { overlap_seconds: '60' }, { x: 1 }]) {
      expectInvalidArgument(await rotate(body));
    }
    const response = await rotate({ overlap_seconds: 0 }).expect(200);
    const fresh = response.body.webhook.secret as string;
    expect(response.body.webhook.previous_secret_expires_at).toBeNull();
    receiver.secret = fresh;
    secret = fresh;
    const key = await t.createKey(admin, 'no overlap');
    const request = await arrivalOf(key.id);
    expect(request.headers['webhook-signature'].split(' ')).toHaveLength(1);
    expect(new Webhook(fresh).verify(request.body, request.headers)).toMatchObject({ type: 'api_key.created' });
  });

  it('a disabled endpoint is resent nothing', async () => {
    const id = await sendTest();
    await t
      .get(DataSource)
      .query(`UPDATE webhooks SET disabled_at = '${new Date().toISOString()}' WHERE id = '${webhookId}'`);
    try {
      expectError(await resend(id), 400, 'FAILED_PRECONDITION', 'webhook is disabled', 'webhook_disabled');
    } finally {
      await t.get(DataSource).query(`UPDATE webhooks SET disabled_at = NULL WHERE id = '${webhookId}'`);
    }
  });

  it('prunes events and their deliveries, answers included, past WEBHOOK_RETENTION_DAYS', async () => {
    const count = async () =>
      Number(
        (
          await t
            .get(DataSource)
            .query(`SELECT COUNT(*) AS n FROM webhook_deliveries WHERE webhook_id = '${webhookId}'`)
        )[0].n,
      );
    expect(await count()).toBeGreaterThan(0);
    await t.get(WebhookScheduler).run(new Date(Date.now() + 29 * DAY_MS));
    expect(await count()).toBeGreaterThan(0);
    await t.get(WebhookScheduler).run(new Date(Date.now() + 33 * DAY_MS));
    expect(await count()).toBe(0);
  });
});
