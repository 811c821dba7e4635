import { DataSource } from 'typeorm';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher';
import { WebhookScheduler } from '../../src/webhooks/webhook-scheduler';
import { freezeDate } from '../support/clock';
import { bearer } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { waitFor } from '../support/wait';
import { Receiver } from './receiver';

/**
 * `api_key.expiring` (docs/webhooks.md#events): 7 days and 1 day before a key's `expires_at`, each once, however often
 * the scheduler runs; never for a revoked key, a key without expiry, or an organization that did not subscribe.
 */
const ROUTE = '/v1/organization/webhooks';
const HOUR = 3600_000;
const DAY = 24 * HOUR;

describe(`api_key.expiring notices on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  let receiver: Receiver;
  let other: Receiver;

  beforeAll(async () => {
    t = await createTestApp();
    other = await Receiver.start();
    admin = await t.user({ org: 'expiring', role: 'admin', ttl: 30 * 86400 });
    receiver = await Receiver.start();
    const { body } = await t
      .http()
      .post(ROUTE)
      .set(bearer(admin.token))
      .send({ url: receiver.url, events: ['api_key.expiring'] })
      .expect(201);
    receiver.secret = body.webhook.secret;
  });
  afterAll(async () => {
    jest.useRealTimers();
    await t.close();
    await receiver.close();
    await other.close();
  });

  it('sends the 7-day and the 1-day notice of each key once', async () => {
    const start = Date.now();
    freezeDate(start);
    const at = (ms: number) => ({ expires_at: new Date(start + ms).toISOString() });
    const tenDays = await t.createKey(admin, 'ten days', at(10 * DAY));
    const threeDays = await t.createKey(admin, 'three days', at(3 * DAY));
    const twelveHours = await t.createKey(admin, 'twelve hours', at(12 * HOUR));
    const revoked = await t.createKey(admin, 'revoked', at(2 * DAY));
    await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set(bearer(admin.token)).expect(200);
    await t.createKey(admin, 'no expiry');
    // Another organization, whose endpoint does not subscribe to api_key.expiring.
    const elsewhere = await t.user({ org: 'expiring-elsewhere', role: 'admin', ttl: 30 * 86400 });
    const { body } = await t
      .http()
      .post(ROUTE)
      .set(bearer(elsewhere.token))
      .send({ url: other.url, events: ['api_key.created'] })
      .expect(201);
    other.secret = body.webhook.secret;
    await t.createKey(elsewhere, 'elsewhere', at(2 * DAY));
    const scheduler = t.get(WebhookScheduler);
    const dispatcher = t.get(WebhookDispatcher);
    // Every delivery answered and its success written: a delivery received but not yet marked when the clock jumps
    // would look like one whose lease ran out, and be sent again.
    const received = async (count: number) => {
      await receiver.waitFor(count);
      await waitFor('every delivery marked succeeded', async () => {
        const [row] = await t
          .get(DataSource)
          .query(`SELECT count(*) AS n FROM webhook_deliveries WHERE status = 'pending'`);
        return Number(row.n) === 0 || undefined;
      });
    };
    const notices = async () => {
      await dispatcher.run();
      return receiver.received
        .filter((r) => r.payload.type === 'api_key.expiring')
        .map((r) => [r.payload.data.api_key_id, r.payload.data.days_before]);
    };

    // Now: the 7-day notice of the key with three days left, the 1-day notice of the one with twelve hours.
    expect(await scheduler.sendExpiryNotices()).toBe(2);
    await received(2);
    expect(await notices()).toEqual(
      expect.arrayContaining([
        [threeDays.id, 7],
        [twelveHours.id, 1],
      ]),
    );
    const first = receiver.received.find((r) => r.payload.data.api_key_id === twelveHours.id)!;
    expect(first.payload).toEqual({
      type: 'api_key.expiring',
      timestamp: new Date(start).toISOString(),
      data: {
        organization_id: admin.organizationId,
        api_key_id: twelveHours.id,
        user_id: admin.userId,
        expires_at: new Date(start + 12 * HOUR).toISOString(),
        days_before: 1,
      },
    });
    // Again, at once and a few minutes later: nothing new.
    expect(await scheduler.sendExpiryNotices()).toBe(0);
    jest.setSystemTime(start + 10 * 60_000);
    expect(await scheduler.sendExpiryNotices()).toBe(0);

    // Two and a half days on: the three-day key's 1-day notice. Each notice is received before the clock moves on: one
    // signed before a jump of days would be refused as too old by the receiver (and sent again later).
    jest.setSystemTime(start + 2.5 * DAY);
    expect(await scheduler.sendExpiryNotices()).toBe(1);
    await received(3);
    // Three and a half days on: the ten-day key has six and a half left.
    jest.setSystemTime(start + 3.5 * DAY);
    expect(await scheduler.sendExpiryNotices()).toBe(1);
    expect(await scheduler.sendExpiryNotices()).toBe(0);
    await received(4);
    // Nine and a half days on: its 1-day notice; and once only, whichever instance or run writes it.
    jest.setSystemTime(start + 9.5 * DAY);
    expect(await Promise.all([scheduler.sendExpiryNotices(), scheduler.sendExpiryNotices()])).toEqual(
      expect.arrayContaining([0, 1]),
    );
    await received(5);
    jest.setSystemTime(start + 11 * DAY);
    expect(await scheduler.sendExpiryNotices()).toBe(0);

    await received(5);
    expect((await notices()).sort()).toEqual(
      [
        [threeDays.id, 7],
        [twelveHours.id, 1],
        [threeDays.id, 1],
        [tenDays.id, 7],
        [tenDays.id, 1],
      ].sort(),
    );
    expect(receiver.received).toHaveLength(5);
    // The other organization's endpoint got its key's creation only.
    expect(other.received.map((r) => r.payload.type)).toEqual(['api_key.created']);
    expect([...receiver.refused, ...other.refused]).toEqual([]);
    // Eight keys, two scheduler runs and their deliveries: more than the 5 s default on a loaded PostgreSQL.
  }, 30_000);
});
