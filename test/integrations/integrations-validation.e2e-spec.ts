import type { Response } from 'supertest';
import { FakeDatadog } from '../support/fakes/fake-datadog';
import { bearer, expectError, expectInvalidArgument } from '../support/http-assertions';
import {
  ALL_CALLED_PATHS,
  datadogKeys,
  expectedValidation,
  OPTIONAL,
  PROBE_PATH,
  REQUIRED,
  resetFakeDatadog,
  startWithFakeDatadog,
  storedIntegrations,
} from '../support/monitoring';
import { TestApp, TestUser } from '../support/test-app';

/**
 * The validation rules of docs/integrations.md, driven through
 * POST .../monitoring/validate and POST /v1/notification-integrations against a fake Datadog.
 */
describe('monitoring credential validation (e2e)', () => {
  let fake: FakeDatadog;
  let t: TestApp;
  let admin: TestUser;
  const keys = datadogKeys('validation');
  const config = { ...keys, site: 'datadoghq.com' };

  const validate = (body: unknown = config): Promise<Response> =>
    t
      .http()
      .post('/v1/notification-integrations/monitoring/validate')
      .set(bearer(admin.token))
      .send(body as object);
  const create = (body: unknown = { type: 'monitoring', name: 'prod', config }): Promise<Response> =>
    t
      .http()
      .post('/v1/notification-integrations')
      .set(bearer(admin.token))
      .send(body as object);

  const expectNothingStored = async (): Promise<void> => {
    expect(await storedIntegrations(t)).toEqual([]);
  };
  const expectOnlyReads = (): void => {
    expect(fake.calls.filter((call) => call.method !== 'GET')).toEqual([]);
  };
  const expectUnavailable = (response: Response): void =>
    expectError(response, 503, 'UNAVAILABLE', 'monitoring provider unavailable', 'monitoring_unavailable');

  beforeAll(async () => {
    ({ fake, t } = await startWithFakeDatadog());
    admin = await t.user({ org: 'validation-org', role: 'admin' });
  });
  afterAll(async () => {
    await t.close();
    await fake.close();
  });
  beforeEach(() => resetFakeDatadog(fake, keys));
  afterEach(async () => {
    for (const row of await storedIntegrations(t)) {
      await t.http().delete(`/v1/notification-integrations/${row.id}`).set(bearer(admin.token)).expect(200);
    }
  });

  describe('POST /v1/notification-integrations/monitoring/validate', () => {
    it('reports every check Granted, through read-only calls with the keys as headers, and stores nothing', async () => {
      const response = await validate();
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ validation: expectedValidation() });
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(fake.calls.map((call) => call.path).sort()).toEqual(ALL_CALLED_PATHS);
      expectOnlyReads();
      for (const call of fake.calls) {
        expect(call.headers['dd-api-key']).toBe(keys.api_key);
        expect(call.headers['dd-application-key']).toBe(keys.application_key);
        expect(call.headers.accept).toBe('application/json');
        expect(JSON.stringify(call.query)).not.toContain(keys.api_key);
        expect(JSON.stringify(call.query)).not.toContain(keys.application_key);
      }
      await expectNothingStored();
    });

    it('reports invalid keys with 200 and every permission Unknown, without probing', async () => {
      const response = await validate({ ...config, api_key: 'ffffffffffffffffffffffffffffffff' });
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ validation: expectedValidation({}, 'Invalid') });
      expect(fake.calls.map((call) => call.path)).toEqual(['/api/v1/validate']);
      await expectNothingStored();
    });

    it('an application key the provider refuses is Invalid too', async () => {
      const response = await validate({ ...config, application_key: 'e'.repeat(40) });
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ validation: expectedValidation({}, 'Invalid') });
      expect(fake.calls.map((call) => call.path)).toEqual(['/api/v1/validate', '/api/v2/validate_keys']);
    });

    it('reports a missing required permission with 200 (nothing is being saved)', async () => {
      fake.revoke('notebooks_read', 'usage_read');
      const response = await validate();
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        validation: expectedValidation({ notebooks_read: 'Missing', usage_read: 'Missing' }),
      });
    });

    it('reports an optional check it could not make as Unknown', async () => {
      fake.fail('/api/v1/query', { status: 500 });
      const response = await validate();
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ validation: expectedValidation({ timeseries_query: 'Unknown' }) });
    });

    it.each([
      ['/api/v1/validate', 500],
      ['/api/v2/validate_keys', 503],
      ['/api/v1/slo', 502],
    ])('answers 503 when %s keeps failing with %i', async (path, status) => {
      fake.fail(path, { status });
      expectUnavailable(await validate());
      expect(fake.callsTo(path)).toHaveLength(3);
    });
  });

  describe('saving: docs/integrations.md#validation', () => {
    it('rule 1: invalid keys block the save, with the validation beside code and message', async () => {
      fake.acceptKeys({ apiKeys: ['someone-else'] });
      const response = await create();
      expect(response.status).toBe(400);
      expect(response.body).toStrictEqual({
        code: 'FAILED_PRECONDITION',
        message: 'monitoring api keys are invalid',
        reason: 'monitoring_keys_invalid',
        validation: expectedValidation({}, 'Invalid'),
      });
      await expectNothingStored();
      expectOnlyReads();
    });

    it.each(REQUIRED)('rule 2: required %s missing blocks the save', async (permission) => {
      fake.revoke(permission);
      const response = await create();
      expect(response.status).toBe(400);
      expect(response.body).toStrictEqual({
        code: 'FAILED_PRECONDITION',
        message: 'required monitoring permissions are missing',
        reason: 'monitoring_permissions_missing',
        validation: expectedValidation({ [permission]: 'Missing' }),
      });
      expect(fake.callsTo(PROBE_PATH[permission])).toHaveLength(1);
      await expectNothingStored();
      expectOnlyReads();
    });

    it('rule 2 wins over an optional failure and over other required ones being missing', async () => {
      fake.revoke('slos_read', 'dashboards_read', 'audit_logs_read');
      fake.fail('/api/v1/query', { status: 503 });
      const response = await create();
      expect(response.status).toBe(400);
      expect(response.body).toStrictEqual({
        code: 'FAILED_PRECONDITION',
        message: 'required monitoring permissions are missing',
        reason: 'monitoring_permissions_missing',
        validation: expectedValidation({
          slos_read: 'Missing',
          dashboards_read: 'Missing',
          audit_logs_read: 'Missing',
          timeseries_query: 'Unknown',
        }),
      });
      await expectNothingStored();
    });

    it.each(OPTIONAL)('rule 3: only optional %s missing saves, and reports it', async (permission) => {
      fake.revoke(permission);
      const response = await create();
      expect(response.status).toBe(201);
      expect(response.body.notification_integration.validation).toStrictEqual(
        expectedValidation({ [permission]: 'Missing' }),
      );
      expect(await storedIntegrations(t)).toHaveLength(1);
    });

    it('rule 3: every optional permission missing still saves', async () => {
      fake.revoke(...OPTIONAL);
      const response = await create();
      expect(response.status).toBe(201);
      expect(response.body.notification_integration.validation).toStrictEqual(
        expectedValidation(Object.fromEntries(OPTIONAL.map((name) => [name, 'Missing' as const]))),
      );
      const [row] = await storedIntegrations(t);
      expect(JSON.parse(row.validation)).toEqual(response.body.notification_integration.validation);
    });
  });

  describe('provider errors and timeouts: never Missing', () => {
    it.each([
      ['/api/v1/validate', 500],
      ['/api/v1/validate', 503],
      ['/api/v1/validate', 429],
      ['/api/v2/validate_keys', 502],
      ['/api/v2/validate_keys', 429],
    ])('key check %s answering %i after retries: 503 and nothing stored', async (path, status) => {
      fake.fail(path, { status });
      expectUnavailable(await create());
      expect(fake.callsTo(path)).toHaveLength(3);
      await expectNothingStored();
    });

    it('a rate limit that asks for longer than we wait is not waited for', async () => {
      fake.rateLimitResetSeconds = 60;
      fake.fail('/api/v1/validate', { status: 429 });
      expectUnavailable(await create());
      expect(fake.callsTo('/api/v1/validate')).toHaveLength(1);
      await expectNothingStored();
    });

    it.each(REQUIRED)('required %s failing with 5xx: 503, not "missing", and nothing stored', async (permission) => {
      fake.fail(PROBE_PATH[permission], { status: 500 });
      expectUnavailable(await create());
      expectUnavailable(await validate());
      await expectNothingStored();
    });

    it('a required check rate-limited for good: 503', async () => {
      fake.fail('/api/v1/monitor', { status: 429 });
      expectUnavailable(await create());
      expect(fake.callsTo('/api/v1/monitor')).toHaveLength(3);
      await expectNothingStored();
    });

    it('a required probe answered 400 (a bug of ours) is Unknown: 503', async () => {
      fake.fail('/api/v1/metrics', { status: 400 });
      expectUnavailable(await create());
      expect(fake.callsTo('/api/v1/metrics')).toHaveLength(1);
      await expectNothingStored();
    });

    it('optional checks failing are Unknown and the save goes ahead', async () => {
      fake.fail('/api/v2/current_user', { status: 503 });
      fake.fail('/api/v2/audit/events', { status: 429 });
      fake.fail('/api/v1/usage/summary', { status: 400 });
      const response = await create();
      expect(response.status).toBe(201);
      expect(response.body.notification_integration.validation).toStrictEqual(
        expectedValidation({
          logs_live_tail: 'Unknown',
          logs_read_index_data: 'Unknown',
          usage_notifications_read: 'Unknown',
          audit_logs_read: 'Unknown',
          usage_read: 'Unknown',
        }),
      );
    });

    it('a slow key check times out: 503 and nothing stored', async () => {
      fake.delay('/api/v1/validate', 5000);
      expectUnavailable(await create());
      await expectNothingStored();
    });

    it('a slow required probe times out: 503, not "missing"', async () => {
      fake.delay('/api/v1/dashboard', 5000);
      expectUnavailable(await create());
      await expectNothingStored();
    });

    it('a slow optional probe times out: Unknown, and the save goes ahead', async () => {
      fake.delay('/api/v2/logs/config/archives', 5000);
      const response = await create();
      expect(response.status).toBe(201);
      expect(response.body.notification_integration.validation).toStrictEqual(
        expectedValidation({ logs_read_archives: 'Unknown' }),
      );
    });

    it('a redirect is not followed: the keys are not sent on', async () => {
      fake.fail('/api/v1/validate', { status: 302, headers: { Location: `${fake.url}/stolen` } });
      expectUnavailable(await create());
      expect(fake.callsTo('/stolen')).toEqual([]);
      expect(fake.callsTo('/api/v1/validate')).toHaveLength(1);
    });
  });

  describe('rate limits and transient errors that clear', () => {
    it('429 on the key check, then success: saved', async () => {
      fake.fail('/api/v1/validate', { status: 429, times: 1 });
      const response = await create();
      expect(response.status).toBe(201);
      expect(response.body.notification_integration.validation).toStrictEqual(expectedValidation());
      expect(fake.callsTo('/api/v1/validate')).toHaveLength(2);
    });

    it('429 twice on a required probe, then success: Granted', async () => {
      fake.fail('/api/v1/notebooks', { status: 429, times: 2 });
      const response = await create();
      expect(response.status).toBe(201);
      expect(response.body.notification_integration.validation).toStrictEqual(expectedValidation());
      expect(fake.callsTo('/api/v1/notebooks')).toHaveLength(3);
    });

    it('503 with Retry-After, then success', async () => {
      fake.fail('/api/v2/validate_keys', { status: 503, times: 1, headers: { 'Retry-After': '0' } });
      expect((await validate()).status).toBe(200);
      expect(fake.callsTo('/api/v2/validate_keys')).toHaveLength(2);
    });
  });

  describe('sites (docs/integrations.md#validation)', () => {
    it.each([
      ['datadoghq.com', 'datadoghq.com'],
      ['us3.datadoghq.com', 'us3.datadoghq.com'],
      ['us5.datadoghq.com', 'us5.datadoghq.com'],
      ['datadoghq.eu', 'datadoghq.eu'],
      ['ap1.datadoghq.com', 'ap1.datadoghq.com'],
      ['ap2.datadoghq.com', 'ap2.datadoghq.com'],
      ['uk1.datadoghq.com', 'uk1.datadoghq.com'],
      ['ddog-gov.com', 'ddog-gov.com'],
      ['us2.ddog-gov.com', 'us2.ddog-gov.com'],
      ['  DataDogHQ.EU ', 'datadoghq.eu'],
      ['US5.DATADOGHQ.COM', 'us5.datadoghq.com'],
    ])('accepts %j and stores %j', async (site, stored) => {
      const response = await create({ type: 'monitoring', name: 'site', config: { ...keys, site } });
      expect(response.status).toBe(201);
      expect(response.body.notification_integration.config.site).toBe(stored);
      const [row] = await storedIntegrations(t);
      expect(row.site).toBe(stored);
    });

    it.each([
      'datadoghq.com.evil.example',
      'evil.example/datadoghq.com',
      'evil.datadoghq.com',
      'api.datadoghq.com',
      'https://api.datadoghq.com',
      'http://127.0.0.1:1',
      'datadoghq.com/',
      'datadoghq.com:443',
      'datadoghq.com@evil.example',
      'datadoghq.com#x',
      'datadoghq.cоm',
      'datadoghq',
      'us4.datadoghq.com',
      'localhost',
      '127.0.0.1',
      '',
      '   ',
      '__proto__',
    ])('refuses %j with 400 before calling anyone, and stores nothing', async (site) => {
      expectInvalidArgument(await validate({ ...keys, site }));
      expectInvalidArgument(await create({ type: 'monitoring', name: 'site', config: { ...keys, site } }));
      expect(fake.calls).toEqual([]);
      await expectNothingStored();
    });
  });

  describe('request bodies', () => {
    const good = { type: 'monitoring', name: 'prod', config };
    it.each([
      ['no type', { name: 'x', config }],
      ['another type', { ...good, type: 'pagerduty' }],
      ['no name', { type: 'monitoring', config }],
      ['an empty name', { ...good, name: '' }],
      ['a 256-character name', { ...good, name: 'n'.repeat(256) }],
      ['a name that is not a string', { ...good, name: 5 }],
      ['a null name', { ...good, name: null }],
      ['no config', { type: 'monitoring', name: 'x' }],
      ['a config that is a list', { ...good, config: [config] }],
      ['a config that is a string', { ...good, config: 'datadoghq.com' }],
      ['no api_key', { ...good, config: { application_key: keys.application_key, site: 'datadoghq.com' } }],
      ['no application_key', { ...good, config: { api_key: keys.api_key, site: 'datadoghq.com' } }],
      ['no site', { ...good, config: { ...keys } }],
      ['an empty api_key', { ...good, config: { ...config, api_key: '' } }],
      ['an empty application_key', { ...good, config: { ...config, application_key: '' } }],
      ['a 257-character api_key', { ...good, config: { ...config, api_key: 'a'.repeat(257) } }],
      ['a 257-character application_key', { ...good, config: { ...config, application_key: 'a'.repeat(257) } }],
      ['a numeric api_key', { ...good, config: { ...config, api_key: 123 } }],
      ['an unknown top-level property', { ...good, extra: true }],
      ['an unknown config property', { ...good, config: { ...config, url: 'https://evil.example' } }],
    ])('create with %s: 400, no provider call, nothing stored', async (_case, body) => {
      expectInvalidArgument(await create(body));
      expect(fake.calls).toEqual([]);
      await expectNothingStored();
    });

    it.each([
      ['no site', { ...keys }],
      ['an unknown property', { ...config, base_url: 'http://127.0.0.1' }],
      ['a 257-character key', { ...config, application_key: 'b'.repeat(257) }],
      ['a list', [config]],
    ])('validate with %s: 400', async (_case, body) => {
      expectInvalidArgument(await validate(body));
      expect(fake.calls).toEqual([]);
    });

    it('accepts 256-character keys and a 255-character name (emoji count as one)', async () => {
      const long = { api_key: 'k'.repeat(256), application_key: 'p'.repeat(256), site: 'datadoghq.com' };
      fake.acceptKeys({ apiKeys: [long.api_key], applicationKeys: [long.application_key] });
      const name = '🔔'.repeat(255);
      const response = await create({ type: 'monitoring', name, config: long });
      expect(response.status).toBe(201);
      expect(response.body.notification_integration.name).toBe(name);
      expect(response.body.notification_integration.config).toEqual({
        site: 'datadoghq.com',
        api_key_last4: 'kkkk',
        application_key_last4: 'pppp',
      });
    });

    it('a key the provider could never have issued (spaces, non-ASCII) is Invalid, not sent', async () => {
      const response = await validate({ ...config, api_key: 'not a key ключ' });
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({ validation: expectedValidation({}, 'Invalid') });
      expect(fake.calls).toEqual([]);
    });
  });
});
