import { Writable } from 'node:stream';
import type { Response } from 'supertest';
import { CredentialCipher } from '../../src/integrations/credential-cipher';
import { FakeDatadog } from '../support/fakes/fake-datadog';
import {
  bearer,
  expectBearerRejected,
  expectError,
  expectInvalidArgument,
  ISO_MS,
  UUID,
} from '../support/http-assertions';
import {
  datadogKeys,
  expectedValidation,
  monitoringEnv,
  startWithFakeDatadog,
  StoredIntegration,
  storedIntegrations,
} from '../support/monitoring';
import { createTestApp, testSecrets, TestApp, TestUser } from '../support/test-app';

/** INTEGRATION as the API returns it (docs/api.md#notification-integration-object). */
interface IntegrationBody {
  id: string;
  name: string;
  created_at: string;
  updated_at: string;
  config: Record<string, string>;
  validation: unknown;
}

/**
 * /v1/notification-integrations (docs/api.md#notification-integration-object): create, list, read, update (the merged
 * configuration re-validated, docs/api.md#patch-v1notification-integrationsid), delete; organization-scoped, with the roles of
 * docs/api.md; keys encrypted at rest and never shown again.
 */
describe('notification integrations (e2e)', () => {
  let fake: FakeDatadog;
  let t: TestApp;
  let admin: TestUser;
  let otherAdmin: TestUser;
  let member: TestUser;
  let viewer: TestUser;
  let outsider: TestUser;
  const keys = datadogKeys('crud');
  const newKeys = datadogKeys('rotated');
  const config = { ...keys, site: 'datadoghq.eu' };
  const path = '/v1/notification-integrations';
  /** Every body the service sent back in this file, to check that no key ever left it. */
  const responses: string[] = [];

  const record = (response: Response): Response => {
    responses.push(response.text);
    return response;
  };
  const create = async (user: TestUser, body: object = { type: 'monitoring', name: 'prod', config }) =>
    record(await t.http().post(path).set(bearer(user.token)).send(body));
  const get = async (user: TestUser, id: string) => record(await t.http().get(`${path}/${id}`).set(bearer(user.token)));
  const list = async (user: TestUser, query = '') =>
    record(await t.http().get(`${path}${query}`).set(bearer(user.token)));
  const patch = async (user: TestUser, id: string, body: object) =>
    record(await t.http().patch(`${path}/${id}`).set(bearer(user.token)).send(body));
  const remove = async (user: TestUser, id: string) =>
    record(await t.http().delete(`${path}/${id}`).set(bearer(user.token)));
  const expectNotFound = (response: Response): void =>
    expectError(response, 404, 'NOT_FOUND', 'notification integration not found', 'integration_not_found');
  const rowOf = async (id: string): Promise<StoredIntegration | undefined> =>
    (await storedIntegrations(t)).find((row) => row.id === id);

  async function created(user: TestUser = admin, name = 'prod'): Promise<IntegrationBody> {
    const response = await create(user, { type: 'monitoring', name, config });
    expect(response.status).toBe(201);
    return response.body.notification_integration;
  }

  beforeAll(async () => {
    ({ fake, t } = await startWithFakeDatadog());
    admin = await t.user({ org: 'acme', role: 'admin' });
    otherAdmin = await t.user({ org: 'acme', role: 'admin' });
    member = await t.user({ org: 'acme', role: 'member' });
    viewer = await t.user({ org: 'acme', role: 'viewer' });
    outsider = await t.user({ org: 'globex', role: 'admin' });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(async () => {
    fake.reset();
    fake.rateLimitResetSeconds = 0;
    fake.acceptKeys({
      apiKeys: [keys.api_key, newKeys.api_key],
      applicationKeys: [keys.application_key, newKeys.application_key],
    });
    for (const row of await storedIntegrations(t)) {
      const owner = row.organization_id === outsider.organizationId ? outsider : admin;
      await remove(owner, row.id);
    }
  });

  it('creates: 201 with the record, keys shown by their last four only, and stores them encrypted', async () => {
    const response = await create(admin);
    expect(response.status).toBe(201);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    const integration = response.body.notification_integration;
    expect(response.body).toStrictEqual({
      notification_integration: {
        id: expect.stringMatching(UUID),
        organization_id: admin.organizationId,
        type: 'monitoring',
        name: 'prod',
        created_by: admin.userId,
        created_at: expect.stringMatching(ISO_MS),
        updated_at: integration.created_at,
        config: {
          site: 'datadoghq.eu',
          api_key_last4: keys.api_key.slice(-4),
          application_key_last4: keys.application_key.slice(-4),
        },
        validation: expectedValidation(),
      },
    });
    const row = (await rowOf(integration.id))!;
    expect(row).toMatchObject({
      organization_id: admin.organizationId,
      created_by: admin.userId,
      name: 'prod',
      site: 'datadoghq.eu',
      api_key_last4: keys.api_key.slice(-4),
      application_key_last4: keys.application_key.slice(-4),
    });
    expect(JSON.parse(row.validation)).toEqual(integration.validation);
    // AES-256-GCM under INTEGRATIONS_ENCRYPTION_KEY, key id k1, bound to the record and field.
    const cipher = new CredentialCipher({ id: 'k1', key: testSecrets.INTEGRATIONS_ENCRYPTION_KEY });
    expect(row.api_key_encrypted).toMatch(/^v1:k1:/);
    expect(row.application_key_encrypted).toMatch(/^v1:k1:/);
    expect(cipher.decrypt(row.api_key_encrypted, row.id, 'api_key')).toBe(keys.api_key);
    expect(cipher.decrypt(row.application_key_encrypted, row.id, 'application_key')).toBe(keys.application_key);
    const rowText = JSON.stringify(row);
    expect(rowText).not.toContain(keys.api_key);
    expect(rowText).not.toContain(keys.application_key);
  });

  it('reads one back by id, with the same body', async () => {
    const integration = await created();
    const response = await get(admin, integration.id);
    expect(response.status).toBe(200);
    expect(response.body).toStrictEqual({ notification_integration: integration });
  });

  it('an upper-case id finds the same record', async () => {
    const integration = await created();
    expect((await get(admin, integration.id.toUpperCase())).body.notification_integration.id).toBe(integration.id);
  });

  describe('list', () => {
    it('pages the organization`s integrations, newest first', async () => {
      const first = await created(admin, 'one');
      const second = await created(otherAdmin, 'two');
      const third = await created(admin, 'three');
      await created(outsider, 'not ours');
      const all = await list(viewer);
      expect(all.status).toBe(200);
      expect(all.body).toStrictEqual({
        notification_integrations: [third, second, first],
        page: 1,
        limit: 20,
        total_count: 3,
      });
      const page2 = await list(admin, '?page=2&limit=2');
      expect(page2.body).toStrictEqual({ notification_integrations: [first], page: 2, limit: 2, total_count: 3 });
      const beyond = await list(admin, '?page=5&limit=2');
      expect(beyond.body).toStrictEqual({ notification_integrations: [], page: 5, limit: 2, total_count: 3 });
    });

    it.each(['?limit=0', '?limit=101', '?page=0', '?page=x', '?limit=1.5', '?other=1', '?page=101&limit=100'])(
      'refuses %s with 400',
      async (query) => {
        expectInvalidArgument(await list(admin, query));
      },
    );
  });

  describe('PATCH: the merged configuration is re-validated', () => {
    it('a new name alone: validated again with the stored keys, then saved', async () => {
      const before = await created();
      fake.calls.length = 0;
      fake.revoke('usage_read');
      const response = await patch(admin, before.id, { name: 'renamed' });
      expect(response.status).toBe(200);
      const after = response.body.notification_integration;
      expect(after).toStrictEqual({
        ...before,
        name: 'renamed',
        updated_at: expect.stringMatching(ISO_MS),
        validation: expectedValidation({ usage_read: 'Missing' }),
      });
      expect(Date.parse(after.updated_at)).toBeGreaterThanOrEqual(Date.parse(before.updated_at));
      expect(fake.callsTo('/api/v1/validate')).toHaveLength(1);
      for (const call of fake.calls) {
        expect(call.headers['dd-api-key']).toBe(keys.api_key);
        expect(call.headers['dd-application-key']).toBe(keys.application_key);
      }
      expect((await get(admin, before.id)).body.notification_integration).toStrictEqual(after);
    });

    it('a new api_key: merged with the stored application key and site', async () => {
      const before = await created();
      fake.calls.length = 0;
      const response = await patch(admin, before.id, { config: { api_key: newKeys.api_key } });
      expect(response.status).toBe(200);
      expect(response.body.notification_integration.config).toEqual({
        site: 'datadoghq.eu',
        api_key_last4: newKeys.api_key.slice(-4),
        application_key_last4: keys.application_key.slice(-4),
      });
      expect(fake.calls.length).toBeGreaterThan(2);
      for (const call of fake.calls) {
        expect(call.headers['dd-api-key']).toBe(newKeys.api_key);
        expect(call.headers['dd-application-key']).toBe(keys.application_key);
      }
      const row = (await rowOf(before.id))!;
      const cipher = new CredentialCipher({ id: 'k1', key: testSecrets.INTEGRATIONS_ENCRYPTION_KEY });
      expect(cipher.decrypt(row.api_key_encrypted, row.id, 'api_key')).toBe(newKeys.api_key);
      expect(cipher.decrypt(row.application_key_encrypted, row.id, 'application_key')).toBe(keys.application_key);
    });

    it('a new site (normalized) and application key', async () => {
      const before = await created();
      const response = await patch(admin, before.id, {
        config: { site: ' US3.datadoghq.com', application_key: newKeys.application_key },
      });
      expect(response.status).toBe(200);
      expect(response.body.notification_integration.config).toEqual({
        site: 'us3.datadoghq.com',
        api_key_last4: keys.api_key.slice(-4),
        application_key_last4: newKeys.application_key.slice(-4),
      });
      expect((await rowOf(before.id))!.site).toBe('us3.datadoghq.com');
    });

    it('an empty body re-validates and keeps everything', async () => {
      const before = await created();
      fake.calls.length = 0;
      const response = await patch(admin, before.id, {});
      expect(response.status).toBe(200);
      expect(response.body.notification_integration).toMatchObject({ name: 'prod', config: before.config });
      expect(fake.callsTo('/api/v2/validate_keys')).toHaveLength(1);
    });

    describe('blocked: the stored record is unchanged', () => {
      let before: IntegrationBody;
      let row: StoredIntegration | undefined;
      beforeEach(async () => {
        before = await created();
        row = await rowOf(before.id);
        fake.calls.length = 0;
      });
      afterEach(async () => {
        expect(await rowOf(before.id)).toEqual(row);
        expect((await get(admin, before.id)).body).toStrictEqual({ notification_integration: before });
        expect(fake.calls.filter((call) => call.method !== 'GET')).toEqual([]);
      });

      it('by an api_key the provider refuses (the name in the same PATCH is not saved either)', async () => {
        const response = await patch(admin, before.id, { name: 'renamed', config: { api_key: 'f'.repeat(32) } });
        expect(response.status).toBe(400);
        expect(response.body).toStrictEqual({
          code: 'FAILED_PRECONDITION',
          message: 'monitoring api keys are invalid',
          reason: 'monitoring_keys_invalid',
          validation: expectedValidation({}, 'Invalid'),
        });
      });

      it('by stored keys that no longer work', async () => {
        fake.acceptKeys({ applicationKeys: ['revoked-everything'] });
        const response = await patch(admin, before.id, { name: 'renamed' });
        expect(response.status).toBe(400);
        expect(response.body.message).toBe('monitoring api keys are invalid');
      });

      it('by a required permission now missing', async () => {
        fake.revoke('monitors_read');
        const response = await patch(admin, before.id, { name: 'renamed', config: { site: 'datadoghq.com' } });
        expect(response.status).toBe(400);
        expect(response.body).toStrictEqual({
          code: 'FAILED_PRECONDITION',
          message: 'required monitoring permissions are missing',
          reason: 'monitoring_permissions_missing',
          validation: expectedValidation({ monitors_read: 'Missing' }),
        });
      });

      it('by the provider being unavailable', async () => {
        fake.fail('/api/v1/validate', { status: 503 });
        expectError(
          await patch(admin, before.id, { name: 'renamed' }),
          503,
          'UNAVAILABLE',
          'monitoring provider unavailable',
          'monitoring_unavailable',
        );
      });

      it('by a timeout on a required check', async () => {
        fake.delay('/api/v1/slo', 5000);
        expectError(
          await patch(admin, before.id, { name: 'renamed' }),
          503,
          'UNAVAILABLE',
          'monitoring provider unavailable',
          'monitoring_unavailable',
        );
      });

      it.each([
        ['a null name', { name: null }],
        ['an empty name', { name: '' }],
        ['a null config', { config: null }],
        ['a null api_key', { config: { api_key: null } }],
        ['an empty application_key', { config: { application_key: '' } }],
        ['a look-alike site', { config: { site: 'datadoghq.eu.evil.example' } }],
        ['a URL as site', { config: { site: 'https://api.datadoghq.eu' } }],
        ['an unknown property', { name: 'x', owner: 'me' }],
        ['an unknown config property', { config: { base_url: 'http://127.0.0.1' } }],
        ['a type change', { type: 'monitoring' }],
      ])('by a body with %s (400, no provider call)', async (_case, body) => {
        expectInvalidArgument(await patch(admin, before.id, body));
        expect(fake.calls).toEqual([]);
      });
    });
  });

  describe('delete', () => {
    it('returns the record, then it is gone', async () => {
      const integration = await created();
      const response = await remove(admin, integration.id);
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ notification_integration: integration });
      expect(await rowOf(integration.id)).toBeUndefined();
      expectNotFound(await get(admin, integration.id));
      expectNotFound(await remove(admin, integration.id));
      expectNotFound(await patch(admin, integration.id, { name: 'x' }));
      expect((await list(admin)).body.total_count).toBe(0);
    });

    it('makes no provider call', async () => {
      const integration = await created();
      fake.calls.length = 0;
      await remove(admin, integration.id);
      expect(fake.calls).toEqual([]);
    });
  });

  describe('ids', () => {
    const unknown = '8a2b7a4e-3c1d-4f5e-9a8b-7c6d5e4f3a2b';
    it('an unknown id is 404 for read, update and delete', async () => {
      expectNotFound(await get(admin, unknown));
      expectNotFound(await patch(admin, unknown, { name: 'x' }));
      expectNotFound(await remove(admin, unknown));
      expect(fake.calls).toEqual([]);
    });

    it.each(['not-a-uuid', '123', '8a2b7a4e3c1d4f5e9a8b7c6d5e4f3a2b0'])('%s is 400', async (id) => {
      expectInvalidArgument(await get(admin, id));
      expectInvalidArgument(await patch(admin, id, { name: 'x' }));
      expectInvalidArgument(await remove(admin, id));
    });
  });

  describe('organization isolation', () => {
    it("another organization's admin cannot see, change or delete it (404, never 403)", async () => {
      const integration = await created();
      const row = await rowOf(integration.id);
      fake.calls.length = 0;
      expectNotFound(await get(outsider, integration.id));
      expectNotFound(await patch(outsider, integration.id, { name: 'mine now', config: { api_key: newKeys.api_key } }));
      expectNotFound(await remove(outsider, integration.id));
      expect((await list(outsider)).body).toStrictEqual({
        notification_integrations: [],
        page: 1,
        limit: 20,
        total_count: 0,
      });
      expect(fake.calls).toEqual([]);
      expect(await rowOf(integration.id)).toEqual(row);
    });

    it('belongs to the organization: another admin of it may read, change and delete it', async () => {
      const integration = await created(admin);
      expect((await get(otherAdmin, integration.id)).status).toBe(200);
      const patched = await patch(otherAdmin, integration.id, { name: 'shared' });
      expect(patched.status).toBe(200);
      expect(patched.body.notification_integration.created_by).toBe(admin.userId);
      expect((await remove(otherAdmin, integration.id)).status).toBe(200);
    });
  });

  describe('roles (docs/api.md)', () => {
    it.each(['member', 'viewer'] as const)('a %s may read but not validate, create, change or delete', async (role) => {
      const user = role === 'member' ? member : viewer;
      const integration = await created();
      const row = await rowOf(integration.id);
      fake.calls.length = 0;
      expect((await get(user, integration.id)).status).toBe(200);
      expect((await list(user)).body.total_count).toBe(1);
      const denied = (response: Response): void =>
        expectError(response, 403, 'PERMISSION_DENIED', 'insufficient permissions', 'insufficient_permissions');
      denied(record(await t.http().post(`${path}/monitoring/validate`).set(bearer(user.token)).send(config)));
      denied(await create(user));
      denied(await patch(user, integration.id, { name: 'x' }));
      denied(await remove(user, integration.id));
      expect(fake.calls).toEqual([]);
      expect(await storedIntegrations(t)).toEqual([row]);
    });

    it('no or a bad token is 401 on every route', async () => {
      const id = '8a2b7a4e-3c1d-4f5e-9a8b-7c6d5e4f3a2b';
      expectBearerRejected(await t.http().get(path));
      expectBearerRejected(await t.http().get(`${path}/${id}`));
      expectBearerRejected(await t.http().post(path).send({ type: 'monitoring', name: 'x', config }));
      expectBearerRejected(await t.http().post(`${path}/monitoring/validate`).send(config));
      expectBearerRejected(
        await t.http().patch(`${path}/${id}`).set('Authorization', 'Bearer nope').send({}),
        'token_invalid',
      );
      expectBearerRejected(await t.http().delete(`${path}/${id}`).set('Authorization', `ApiKey x`), 'token_malformed');
      expect(fake.calls).toEqual([]);
    });

    it('an access token exchanged from an admin`s API key works like the session', async () => {
      const key = await t.createKey(admin);
      const token = await t.exchange(key.value);
      const response = await t
        .http()
        .post(path)
        .set(bearer(token))
        .send({ type: 'monitoring', name: 'via key', config });
      expect(response.status).toBe(201);
      expect(response.body.notification_integration.created_by).toBe(admin.userId);
    });

    it('a role change takes effect at once', async () => {
      const user = await t.user({ org: 'acme', role: 'admin' });
      const integration = await created(user);
      await t.user({ org: 'acme', email: user.email, role: 'viewer' });
      expectError(
        await patch(user, integration.id, { name: 'x' }),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
    });
  });

  afterAll(() => {
    // No response of this whole file carried a provider key (docs/api.md#notification-integration-object).
    expect(responses.length).toBeGreaterThan(50);
    for (const text of responses) {
      for (const secret of [keys.api_key, keys.application_key, newKeys.api_key, newKeys.application_key]) {
        expect(text).not.toContain(secret);
      }
    }
  });
});

describe('notification integrations: key rotation and logs (e2e)', () => {
  let fake: FakeDatadog;
  beforeAll(async () => {
    fake = await FakeDatadog.start();
  });
  afterAll(() => fake.close());

  it('a rotated key still opens old values, and an update seals them with the new key', async () => {
    const keys = datadogKeys('rotation');
    const first = await createTestApp({ env: monitoringEnv(fake.url) });
    const admin = await first.user({ org: 'rot', role: 'admin' });
    const made = await first
      .http()
      .post('/v1/notification-integrations')
      .set(bearer(admin.token))
      .send({ type: 'monitoring', name: 'r', config: { ...keys, site: 'datadoghq.com' } })
      .expect(201);
    const id = made.body.notification_integration.id as string;
    const oldKey = first.env.INTEGRATIONS_ENCRYPTION_KEY!;
    await first.app.close();

    const newKey = Buffer.alloc(32, 7).toString('base64');
    const second = await createTestApp({
      database: first.database,
      env: monitoringEnv(fake.url, {
        INTEGRATIONS_ENCRYPTION_KEY: newKey,
        INTEGRATIONS_ENCRYPTION_KEY_ID: 'k2',
        INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: `k1:${oldKey}`,
      }),
    });
    try {
      const user = await second.user({ org: 'rot', email: admin.email, role: 'admin' });
      fake.calls.length = 0;
      const patched = await second
        .http()
        .patch(`/v1/notification-integrations/${id}`)
        .set(bearer(user.token))
        .send({ name: 'rotated' });
      expect(patched.status).toBe(200);
      // The stored keys were opened with k1 and sent to the provider.
      expect(fake.calls[0].headers['dd-api-key']).toBe(keys.api_key);
      const [row] = await storedIntegrations(second);
      expect(CredentialCipher.keyIdOf(row.api_key_encrypted)).toBe('k2');
      expect(CredentialCipher.keyIdOf(row.application_key_encrypted)).toBe('k2');
      expect(new CredentialCipher({ id: 'k2', key: newKey }).decrypt(row.api_key_encrypted, id, 'api_key')).toBe(
        keys.api_key,
      );
    } finally {
      await second.app.close();
      await first.database.drop();
    }
  });

  it('never logs the keys, even when it logs provider trouble', async () => {
    const keys = datadogKeys('logging');
    const lines: string[] = [];
    const stream = new Writable({
      write(chunk: Buffer, _encoding, done) {
        lines.push(chunk.toString());
        done();
      },
    });
    const t = await createTestApp({ env: monitoringEnv(fake.url, { LOG_LEVEL: 'trace' }), logStream: stream });
    try {
      fake.reset();
      fake.rateLimitResetSeconds = 0;
      fake.fail('/api/v1/usage/summary', { status: 400 });
      const admin = await t.user({ role: 'admin' });
      const config = { ...keys, site: 'datadoghq.com' };
      await t
        .http()
        .post('/v1/notification-integrations')
        .set(bearer(admin.token))
        .send({ type: 'monitoring', name: 'l', config })
        .expect(201);
      fake.fail('/api/v1/validate', { status: 500 });
      await t
        .http()
        .post('/v1/notification-integrations/monitoring/validate')
        .set(bearer(admin.token))
        .send(config)
        .expect(503);
      const log = lines.join('');
      expect(log).toContain('permission check unknown');
      expect(log).toContain('/api/v1/usage/summary');
      expect(log).not.toContain(keys.api_key);
      expect(log).not.toContain(keys.application_key);
    } finally {
      await t.close();
    }
  });
});
