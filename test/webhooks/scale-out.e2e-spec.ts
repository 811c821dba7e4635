import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { UnitOfWork } from '../../src/database/unit-of-work';
import { WebhookDeliveriesRepository } from '../../src/webhooks/webhook-deliveries.repository';
import { WebhookDispatcher } from '../../src/webhooks/webhook-dispatcher';
import { freezeDate } from '../support/clock';
import { bearer } from '../support/http-assertions';
import { createTestApp, createTestDatabase, DATABASE_KIND, TestApp, TestDatabase, TestUser } from '../support/test-app';
import { Receiver } from './receiver';
import { waitFor } from '../support/wait';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/**
 * At-least-once, by one instance at a time (docs/adr/0037-signed-webhooks.md#decision): instances sharing a PostgreSQL
 * database deliver each event once, and a delivery claimed by an instance that died is delivered after its lease.
 */
const ROUTE = '/v1/organization/webhooks';

async function deliveryRows(t: TestApp): Promise<Array<{ status: string; attempts: number | string }>> {
  return t.get(DataSource).query('SELECT status, attempts FROM webhook_deliveries');
}

(DATABASE_KIND === 'postgres' ? describe : describe.skip)('two instances on one PostgreSQL database', () => {
  let database: TestDatabase;
  let apps: TestApp[];
  let admin: TestUser;
  let receiver: Receiver;

  beforeAll(async () => {
    database = createTestDatabase();
    const env = { WEBHOOK_POLL_INTERVAL_MS: '100' };
    apps = [await createTestApp({ database, env }), await createTestApp({ database, env })];
    admin = await apps[0].user({ org: 'scale-out', role: 'admin' });
    receiver = await Receiver.start();
    receiver.delayMs = 30;
    const { body } = await apps[0]
      .http()
      .post(ROUTE)
      .set(bearer(admin.token))
      .send({ url: receiver.url, events: ['api_key.created', 'api_key.revoked'] })
      .expect(201);
    receiver.secret = body.webhook.secret;
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    for (const t of apps) await t.close();
    await database.drop();
    await receiver.close();
  });

  it('deliver each event once, whichever instance wrote it', async () => {
    const sent = apps.map((t) =>
      jest.spyOn((t.get(WebhookDispatcher) as unknown as { sender: { send: () => unknown } }).sender, 'send'),
    );
    const keys = await Promise.all(Array.from({ length: 24 }, (_, i) => apps[i % 2].createKey(admin, `key ${i}`)));
    await Promise.all(
      keys
        .slice(0, 8)
        .map((key, i) => apps[i % 2].http().delete(`/v1/user-api-keys/${key.id}`).set(bearer(admin.token)).expect(200)),
    );
    // Both instances look for due deliveries at once, again and again, while they are delivered.
    await Promise.all([
      receiver.waitFor(32),
      ...apps.map(async (t) => {
        for (let i = 0; i < 20; i += 1) await t.get(WebhookDispatcher).run();
      }),
    ]);
    // Every attempt recorded (none pending, so none left to claim), then both instances look again: nothing is resent.
    await waitFor('every delivery succeeded', async () =>
      (await deliveryRows(apps[0])).every((row) => row.status === 'succeeded'),
    );
    await Promise.all(apps.map((t) => t.get(WebhookDispatcher).run()));
    expect(receiver.requests).toBe(32);
    expect(new Set(receiver.received.map((r) => r.id)).size).toBe(32);
    expect(receiver.refused).toEqual([]);
    // Each instance sent some of them, and none twice.
    expect(sent.map((spy) => spy.mock.calls.length)).toEqual([expect.any(Number), expect.any(Number)]);
    expect(sent[0].mock.calls.length + sent[1].mock.calls.length).toBe(32);
    expect(sent.every((spy) => spy.mock.calls.length > 0)).toBe(true);
    expect((await deliveryRows(apps[0])).map((row) => Number(row.attempts))).toEqual(new Array(32).fill(1));
    jest.restoreAllMocks();
  });
});

describe(`a delivery claimed by an instance that died, on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  let receiver: Receiver;

  beforeAll(async () => {
    t = await createTestApp({ env: { WEBHOOK_TIMEOUT_MS: '1000' } });
    admin = await t.user({ org: 'lease', role: 'admin' });
    receiver = await Receiver.start();
    const { body } = await t
      .http()
      .post(ROUTE)
      .set(bearer(admin.token))
      .send({ url: receiver.url, events: ['api_key.created'] })
      .expect(201);
    receiver.secret = body.webhook.secret;
  });
  afterAll(async () => {
    jest.useRealTimers();
    await t.close();
    await receiver.close();
  });

  it('is delivered by another once its lease lapses, and only then', async () => {
    const start = Date.now();
    freezeDate(start);
    // Held up so that the outbox's own attempt does not run first: the "dead" instance claims it.
    const dispatcher = t.get(WebhookDispatcher);
    const wake = jest.spyOn(dispatcher, 'wake').mockImplementation(() => undefined);
    const key = await t.createKey(admin, 'orphaned');
    const repository = t.get(WebhookDeliveriesRepository);
    const due = await repository.dueFairly(new Date(), {
      perEndpoint: 8,
      perOrganization: 8,
      limit: 8,
      busyEndpoints: [],
      busyOrganizations: [],
    });
    const ids = due.map((delivery) => delivery.id);
    const claimed = await t
      .get(UnitOfWork)
      .run((tx) => repository.claim(ids, new Date(), new Date(start + 12_000), randomUUID(), tx));
    expect(claimed.map((delivery) => JSON.parse(delivery.payload).data.api_key_id)).toEqual([key.id]);
    wake.mockRestore();

    await dispatcher.run();
    jest.setSystemTime(start + 11_000);
    await dispatcher.run();
    expect(receiver.requests).toBe(0);
    jest.setSystemTime(start + 12_000);
    await dispatcher.run();
    const [received] = await receiver.waitFor(1);
    expect(received.payload.data.api_key_id).toBe(key.id);
    await waitFor('the delivery succeeded', async () => (await deliveryRows(t))[0].status === 'succeeded');
    expect(receiver.requests).toBe(1);
  });
});
