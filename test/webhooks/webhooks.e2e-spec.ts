import { DataSource } from 'typeorm';
import { AuditService } from '../../src/audit/audit.service';
import { bearer, expectError, expectInvalidArgument, ISO_MS, UUID } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

/**
 * An organization's webhook endpoints (docs/webhooks.md#managing-endpoints): created by the admins of its keys with a
 * secret shown once, listed and deleted, audited; a bad URL or event list is 400 with a message that says what is
 * wrong, and nothing is stored.
 */
const ROUTE = '/v1/organization/webhooks';
const RECEIVER = 'http://127.0.0.1:9/hooks';
/** The reason of each refusal's message (docs/api.md#errors). */
const REASONS: Record<string, string> = {
  'events must be a non-empty list of distinct events among api_key.created, api_key.revoked, api_key.expiring, api_key.exposed, member.removed':
    'webhook_events_invalid',
  'webhook url must be an absolute http or https URL of at most 2048 characters': 'webhook_url_invalid',
  'webhook url must not contain a user name or password': 'webhook_url_invalid',
  'webhook url must not point to a private, loopback, link-local, multicast or reserved address':
    'webhook_url_address_not_allowed',
  'webhook url must use https': 'webhook_url_not_https',
};
const WEBHOOK_FIELDS = [
  'created_at',
  'disabled_at',
  'events',
  'id',
  'organization_id',
  'previous_secret_expires_at',
  'status',
  'url',
];

async function webhookRows(t: TestApp): Promise<Array<{ id: string; secret_encrypted: string }>> {
  return t.get(DataSource).query('SELECT id, secret_encrypted FROM webhooks');
}

describe(`webhook endpoints on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;

  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.user({ org: 'hooks', role: 'admin' });
  });
  afterAll(() => t.close());

  const create = (user: TestUser, body: object) => t.http().post(ROUTE).set(bearer(user.token)).send(body);

  it('creates an endpoint and shows its secret once; the list and the delete never show it', async () => {
    const response = await create(admin, { url: RECEIVER, events: ['api_key.revoked', 'api_key.created'] }).expect(201);
    const webhook = response.body.webhook;
    expect(Object.keys(response.body)).toEqual(['webhook']);
    expect(Object.keys(webhook).sort()).toEqual([...WEBHOOK_FIELDS, 'secret'].sort());
    expect(webhook).toEqual({
      id: expect.stringMatching(UUID),
      organization_id: admin.organizationId,
      url: RECEIVER,
      // Catalogue order, whatever the order asked.
      events: ['api_key.created', 'api_key.revoked'],
      created_at: expect.stringMatching(ISO_MS),
      status: 'active',
      disabled_at: null,
      previous_secret_expires_at: null,
      secret: expect.stringMatching(/^whsec_[A-Za-z0-9+/]{32}$/),
    });
    expect(Buffer.from(webhook.secret.slice('whsec_'.length), 'base64')).toHaveLength(24);

    // Sealed at rest: the secret is not in the row.
    const [row] = (await webhookRows(t)).filter((r) => r.id === webhook.id);
    expect(row.secret_encrypted).toMatch(/^v1:k1:/);
    expect(row.secret_encrypted).not.toContain(webhook.secret.slice('whsec_'.length));

    const list = await t.http().get(ROUTE).set(bearer(admin.token)).expect(200);
    // Outside production a URL on this machine is accepted (RECEIVER is one), and the list says so.
    expect(list.body).toEqual({
      webhooks: [expect.any(Object)],
      page: 1,
      limit: 20,
      total_count: 1,
      loopback_urls_allowed: true,
    });
    const { secret, ...withoutSecret } = webhook;
    expect(list.body.webhooks[0]).toEqual(withoutSecret);
    expect(JSON.stringify(list.body)).not.toContain(secret);

    const deleted = await t.http().delete(`${ROUTE}/${webhook.id}`).set(bearer(admin.token)).expect(200);
    expect(deleted.body).toEqual({ webhook: withoutSecret });
    expect((await t.http().get(ROUTE).set(bearer(admin.token)).expect(200)).body.total_count).toBe(0);
    expect(await webhookRows(t)).toEqual([]);
    // Deleted once: 404 again.
    expectError(
      await t.http().delete(`${ROUTE}/${webhook.id}`).set(bearer(admin.token)),
      404,
      'NOT_FOUND',
      'webhook not found',
      'webhook_not_found',
    );

    const actions = (await t.get(AuditService).list(admin.organizationId)).filter((e) => e.targetId === webhook.id);
    expect(actions.map((e) => [e.action, e.targetType, e.actorUserId]).reverse()).toEqual([
      ['webhook.created', 'webhook', admin.userId],
      ['webhook.deleted', 'webhook', admin.userId],
    ]);
  });

  describe('refuses a bad endpoint with a message that says why, and stores nothing', () => {
    const cases: Array<[string, object, string]> = [
      [
        'a malformed url',
        { url: 'not a url', events: ['api_key.created'] },
        'webhook url must be an absolute http or https URL of at most 2048 characters',
      ],
      [
        'a relative url',
        { url: '/hooks', events: ['api_key.created'] },
        'webhook url must be an absolute http or https URL of at most 2048 characters',
      ],
      [
        'another scheme',
        { url: 'ftp://hooks.example.com/', events: ['api_key.created'] },
        'webhook url must be an absolute http or https URL of at most 2048 characters',
      ],
      [
        'credentials in the url',
        { url: 'https://u:p@hooks.example.com/', events: ['api_key.created'] },
        'webhook url must not contain a user name or password',
      ],
      [
        'http to another machine',
        { url: 'http://hooks.example.com/', events: ['api_key.created'] },
        'webhook url must use https',
      ],
      [
        'a private address',
        { url: 'https://10.1.2.3/', events: ['api_key.created'] },
        'webhook url must not point to a private, loopback, link-local, multicast or reserved address',
      ],
      [
        'the metadata address',
        { url: 'https://169.254.169.254/', events: ['api_key.created'] },
        'webhook url must not point to a private, loopback, link-local, multicast or reserved address',
      ],
      [
        'an unknown event',
        { url: RECEIVER, events: ['api_key.created', 'api_key.deleted'] },
        'events must be a non-empty list of distinct events among api_key.created, api_key.revoked, api_key.expiring, api_key.exposed, member.removed',
      ],
      [
        'no event',
        { url: RECEIVER, events: [] },
        'events must be a non-empty list of distinct events among api_key.created, api_key.revoked, api_key.expiring, api_key.exposed, member.removed',
      ],
      [
        'an event twice',
        { url: RECEIVER, events: ['member.removed', 'member.removed'] },
        'events must be a non-empty list of distinct events among api_key.created, api_key.revoked, api_key.expiring, api_key.exposed, member.removed',
      ],
    ];
    it.each(cases)('%s', async (_name, body, message) => {
      expectError(await create(admin, body), 400, 'INVALID_ARGUMENT', message, REASONS[message]);
      expect(await webhookRows(t)).toEqual([]);
    });

    it('wrong types and unknown fields: the generic 400', async () => {
      for (const body of [
        { url: 42, events: ['api_key.created'] },
        { url: RECEIVER, events: 'api_key.created' },
        { url: RECEIVER, events: [1] },
        { url: RECEIVER },
        { url: RECEIVER, events: ['api_key.created'], secret: 'whsec_mine' },
      ]) {
        expectInvalidArgument(await create(admin, body));
      }
      expect(await webhookRows(t)).toEqual([]);
    });
  });

  it('at most 10 endpoints per organization', async () => {
    const owner = await t.user({ org: 'hooks-cap', role: 'admin' });
    const made = await Promise.all(
      Array.from({ length: 11 }, (_, i) => create(owner, { url: `${RECEIVER}/${i}`, events: ['member.removed'] })),
    );
    expect(made.map((r) => r.status).sort()).toEqual([...new Array(10).fill(201), 400]);
    const refused = made.find((r) => r.status === 400)!;
    expectError(refused, 400, 'FAILED_PRECONDITION', 'webhook limit reached', 'webhook_limit_reached');
    const list = await t.http().get(ROUTE).query({ limit: 4, page: 3 }).set(bearer(owner.token)).expect(200);
    expect([list.body.webhooks.length, list.body.total_count]).toEqual([2, 10]);
    for (const r of made.filter((m) => m.status === 201)) {
      await t.http().delete(`${ROUTE}/${r.body.webhook.id}`).set(bearer(owner.token)).expect(200);
    }
  });

  it("needs api_keys:manage; another organization's endpoint is 404 on every route", async () => {
    const member = await t.user({ org: 'hooks', role: 'member' });
    expectError(
      await create(member, { url: RECEIVER, events: ['api_key.created'] }),
      403,
      'PERMISSION_DENIED',
      'insufficient permissions',
      'insufficient_permissions',
    );
    expect((await t.http().get(ROUTE).set(bearer(member.token))).status).toBe(403);

    const { body } = await create(admin, { url: RECEIVER, events: ['api_key.created'] }).expect(201);
    const id = body.webhook.id as string;
    const other = await t.user({ org: 'hooks-elsewhere', role: 'admin' });
    expect((await t.http().get(ROUTE).set(bearer(other.token)).expect(200)).body.webhooks).toEqual([]);
    for (const request of [
      t.http().delete(`${ROUTE}/${id}`),
      t.http().get(`${ROUTE}/${id}/deliveries`),
      t.http().post(`${ROUTE}/${id}/test`),
    ]) {
      expectError(await request.set(bearer(other.token)), 404, 'NOT_FOUND', 'webhook not found', 'webhook_not_found');
    }
    expectInvalidArgument(await t.http().delete(`${ROUTE}/not-a-uuid`).set(bearer(admin.token)));
    await t.http().delete(`${ROUTE}/${id.toUpperCase()}`).set(bearer(admin.token)).expect(200);
  });
});

describe(`webhook endpoints in production on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;

  beforeAll(async () => {
    t = await createTestApp({ env: { NODE_ENV: 'production' } });
    admin = await t.user({ org: 'hooks-production', role: 'admin' });
  });
  afterAll(() => t.close());

  const refused = async (url: string, message: string): Promise<void> => {
    const response = await t
      .http()
      .post(ROUTE)
      .set(bearer(admin.token))
      .send({ url, events: ['api_key.created'] });
    expectError(response, 400, 'INVALID_ARGUMENT', message, REASONS[message]);
  };

  it('refuses http, even to loopback', async () => {
    for (const url of ['http://hooks.example.com/', 'http://127.0.0.1:8080/', 'http://localhost/']) {
      await refused(url, 'webhook url must use https');
    }
    expect(await webhookRows(t)).toEqual([]);
  });

  it('says in the list that URLs on this machine are refused', async () => {
    const list = await t.http().get(ROUTE).set(bearer(admin.token)).expect(200);
    expect(list.body).toMatchObject({ loopback_urls_allowed: false });
  });

  it('refuses private, loopback, link-local, multicast, reserved and unspecified addresses, however written', async () => {
    for (const url of [
      'https://127.0.0.1/',
      'https://0x7f.1/',
      'https://localhost:8443/',
      'https://10.0.0.1/',
      'https://172.16.5.4/',
      'https://192.168.1.1/',
      'https://100.64.0.1/',
      'https://169.254.169.254/latest/meta-data/',
      'https://0.0.0.0/',
      'https://224.0.0.251/',
      'https://[::1]/',
      'https://[::]/',
      'https://[::ffff:10.0.0.1]/',
      'https://[::ffff:7f00:1]/',
      'https://[fe80::1]/',
      'https://[fd12:3456::1]/',
      'https://[ff02::1]/',
      'https://[64:ff9b::a00:1]/',
    ]) {
      await refused(
        url,
        'webhook url must not point to a private, loopback, link-local, multicast or reserved address',
      );
    }
    expect(await webhookRows(t)).toEqual([]);
  });

  it('accepts https to a host name or a public address', async () => {
    for (const url of [
      'https://hooks.example.com/gatehouse',
      'https://93.184.215.14/in',
      'https://[2606:4700::1111]/in',
    ]) {
      await t
        .http()
        .post(ROUTE)
        .set(bearer(admin.token))
        .send({ url, events: ['api_key.created'] })
        .expect(201);
    }
    expect(await webhookRows(t)).toHaveLength(3);
  });
});
