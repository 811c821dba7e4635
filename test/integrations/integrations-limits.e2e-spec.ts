import { Redis } from 'ioredis';
import type { Response } from 'supertest';
import type { Environment } from '../../src/config/configuration';
import { FakeDatadog } from '../support/fakes/fake-datadog';
import { bearer, expectError } from '../support/http-assertions';
import { datadogKeys, monitoringEnv, PROBE_PATH, storedIntegrations } from '../support/monitoring';
import { redisReachable, TEST_REDIS_URL, uniqueRedisPrefix } from '../support/redis';
import { createTestApp, TestApp, TestUser } from '../support/test-app';
import { pause, waitFor } from '../support/wait';

/**
 * The limits on validations of docs/integrations.md#limits, against the fake Datadog: an overall
 * deadline that aborts the provider calls still in flight, a number of validations per organization
 * and minute (shared through Redis with REDIS_URL), and a cap on validations running at once on one
 * instance. Every validation counts: the validate endpoint, and the one inside a create or an update.
 */
const REDIS_UP = redisReachable();
if (!REDIS_UP) {
  console.warn(`integrations-limits.e2e-spec: Redis at ${TEST_REDIS_URL} is unreachable; the Redis case is SKIPPED`);
}

const NEVER = 600_000;
const PATH = '/v1/notification-integrations';
const keys = datadogKeys('limits');
const config = { ...keys, site: 'datadoghq.com' };

// Promise.resolve: the request starts at the call (a supertest request starts only when awaited).
const validate = (t: TestApp, user: TestUser): Promise<Response> =>
  Promise.resolve(t.http().post(`${PATH}/monitoring/validate`).set(bearer(user.token)).send(config));
const create = (t: TestApp, user: TestUser, name = 'prod'): Promise<Response> =>
  Promise.resolve(t.http().post(PATH).set(bearer(user.token)).send({ type: 'monitoring', name, config }));
const update = (t: TestApp, user: TestUser, id: string, name: string): Promise<Response> =>
  Promise.resolve(t.http().patch(`${PATH}/${id}`).set(bearer(user.token)).send({ name }));

const expectUnavailable = (response: Response): void =>
  expectError(response, 503, 'UNAVAILABLE', 'monitoring provider unavailable', 'monitoring_unavailable');

function expectTooMany(response: Response, maxSeconds: number): void {
  expectError(response, 429, 'RESOURCE_EXHAUSTED', 'too many requests', 'too_many_validations');
  expect(response.headers['retry-after']).toMatch(/^\d+$/);
  expect(Number(response.headers['retry-after'])).toBeGreaterThanOrEqual(1);
  expect(Number(response.headers['retry-after'])).toBeLessThanOrEqual(maxSeconds);
}

describe('monitoring validation limits (e2e)', () => {
  let fake: FakeDatadog;
  beforeAll(async () => {
    fake = await FakeDatadog.start();
  });
  afterAll(() => fake.close());
  beforeEach(() => fake.reset());

  describe('an overall deadline (MONITORING_VALIDATION_DEADLINE_MS)', () => {
    // Long enough for a validation whose provider answers to end in time on a busy machine (about 0.1 s at a load
    // average of 9 on two cores); only the calls that are never answered reach it, and each test waits it out once.
    const DEADLINE_MS = 1_500;
    let t: TestApp;
    let admin: TestUser;
    beforeAll(async () => {
      // Per-request timeouts far beyond the deadline (and the test's own timeout): only the
      // deadline can end these validations.
      t = await createTestApp({
        env: monitoringEnv(fake.url, {
          MONITORING_VALIDATION_DEADLINE_MS: String(DEADLINE_MS),
          MONITORING_REQUEST_TIMEOUT_MS: '60000',
        }),
      });
      admin = await t.user({ org: 'deadline-org', role: 'admin' });
    });
    afterAll(() => t.close());

    it('a key check that is never answered: 503 at the deadline, and the call is aborted', async () => {
      fake.delay('/api/v1/validate', NEVER);
      const response = await validate(t, admin);
      expectUnavailable(response);
      await waitFor('every provider call ended', () => fake.open === 0);
      expect(fake.abandoned.map((call) => call.path)).toEqual(['/api/v1/validate']);
    });

    it('permission probes that are never answered: 503, the probes in flight aborted, no further one started', async () => {
      for (const path of new Set(Object.values(PROBE_PATH))) fake.delay(path, NEVER);
      const response = await validate(t, admin);
      expectUnavailable(response);
      await waitFor('every provider call ended', () => fake.open === 0);
      // The two key checks were answered; MONITORING_PROBE_CONCURRENCY (4) probes were in flight.
      expect(fake.calls.map((call) => call.path).slice(0, 2)).toEqual(['/api/v1/validate', '/api/v2/validate_keys']);
      expect(fake.abandoned).toHaveLength(4);
      expect(fake.calls).toHaveLength(6);
      // An absence is observed over a window: 100 ms after the answer, still no further call.
      await pause(100);
      expect(fake.calls).toHaveLength(6);
    });

    it('inside a create: 503 and nothing stored', async () => {
      fake.delay('/api/v2/validate_keys', NEVER);
      expectUnavailable(await create(t, admin));
      expect(await storedIntegrations(t)).toEqual([]);
      await waitFor('every provider call ended', () => fake.open === 0);
      expect(fake.abandoned.map((call) => call.path)).toEqual(['/api/v2/validate_keys']);
    });

    it('inside an update: 503 and the record as it was', async () => {
      const made = await create(t, admin, 'before');
      expect(made.status).toBe(201);
      const id = made.body.notification_integration.id as string;
      const [before] = await storedIntegrations(t);
      fake.delay('/api/v1/monitor', NEVER);
      expectUnavailable(await update(t, admin, id, 'after'));
      expect(await storedIntegrations(t)).toEqual([before]);
      await waitFor('every provider call ended', () => fake.open === 0);
      expect(fake.abandoned.map((call) => call.path)).toEqual(['/api/v1/monitor']);
      await t.http().delete(`${PATH}/${id}`).set(bearer(admin.token)).expect(200);
    });

    it('a validation that ends in time is not affected', async () => {
      fake.delay('/api/v1/validate', 50);
      const response = await validate(t, admin);
      expect(response.status).toBe(200);
      expect(response.body.validation.can_save).toBe(true);
      expect(fake.abandoned).toEqual([]);
    });
  });

  describe('validations per organization (MONITORING_VALIDATIONS_PER_MINUTE, default 10)', () => {
    /** The default limit: monitoringEnv raises it for the other suites. */
    const defaultLimit = (extra: Environment = {}): Environment =>
      monitoringEnv(fake.url, { MONITORING_VALIDATIONS_PER_MINUTE: undefined, ...extra });
    let t: TestApp;
    beforeAll(async () => {
      t = await createTestApp({ env: defaultLimit() });
    });
    afterAll(() => t.close());

    it('the 11th validation of an organization in a minute is 429 before any provider call; others are not affected', async () => {
      const admin = await t.user({ org: 'rate-org', role: 'admin' });
      // Ten validations: one create, one update, eight through the validate endpoint.
      const made = await create(t, admin, 'first');
      expect(made.status).toBe(201);
      const id = made.body.notification_integration.id as string;
      expect((await update(t, admin, id, 'second')).status).toBe(200);
      for (let i = 0; i < 8; i += 1) expect((await validate(t, admin)).status).toBe(200);
      const [stored] = await storedIntegrations(t);
      const calls = fake.calls.length;

      expectTooMany(await validate(t, admin), 60);
      expectTooMany(await create(t, admin, 'third'), 60);
      expectTooMany(await update(t, admin, id, 'fourth'), 60);
      expect(fake.calls).toHaveLength(calls);
      expect(await storedIntegrations(t)).toEqual([stored]);

      // Another organization has its own allowance; reading is not limited.
      const other = await t.user({ org: 'other-rate-org', role: 'admin' });
      expect((await validate(t, other)).status).toBe(200);
      await t.http().get(`${PATH}/${id}`).set(bearer(admin.token)).expect(200);
      await t.http().delete(`${PATH}/${id}`).set(bearer(admin.token)).expect(200);
    });

    it('counts validations that fail at the provider too', async () => {
      const admin = await t.user({ org: 'rate-failing-org', role: 'admin' });
      fake.fail('/api/v1/validate', { status: 500 });
      for (let i = 0; i < 10; i += 1) expectUnavailable(await validate(t, admin));
      expectTooMany(await validate(t, admin), 60);
    });

    (REDIS_UP ? it : it.skip)('is shared by every instance through Redis', async () => {
      const prefix = uniqueRedisPrefix();
      const env = defaultLimit({ REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix });
      const first = await createTestApp({ env });
      const second = await createTestApp({ env, database: first.database });
      const redis = new Redis(TEST_REDIS_URL);
      try {
        const admin = await first.user({ org: 'shared-rate-org', role: 'admin' });
        for (let i = 0; i < 5; i += 1) {
          expect((await validate(first, admin)).status).toBe(200);
          expect((await validate(second, admin)).status).toBe(200);
        }
        expectTooMany(await validate(first, admin), 60);
        expectTooMany(await validate(second, admin), 60);
        const key = `${prefix}monitoring-validations:org:${admin.organizationId}`;
        expect(Number(await redis.get(key))).toBeGreaterThanOrEqual(10);
        const ttl = await redis.pttl(key);
        expect(ttl).toBeGreaterThan(0);
        expect(ttl).toBeLessThanOrEqual(60_000);
      } finally {
        redis.disconnect();
        await second.app.close();
        await first.close();
      }
    });
  });

  describe('validations at once on one instance (MONITORING_MAX_CONCURRENT_VALIDATIONS)', () => {
    const CAP = 2;
    const DEADLINE_MS = 1500;
    let t: TestApp;
    const admins: TestUser[] = [];
    beforeAll(async () => {
      t = await createTestApp({
        env: monitoringEnv(fake.url, {
          MONITORING_MAX_CONCURRENT_VALIDATIONS: String(CAP),
          MONITORING_VALIDATION_DEADLINE_MS: String(DEADLINE_MS),
          MONITORING_REQUEST_TIMEOUT_MS: '60000',
        }),
      });
      for (let i = 0; i < 4; i += 1) admins.push(await t.user({ org: `cap-org-${i}`, role: 'admin' }));
    });
    afterAll(() => t.close());

    it('beyond the cap: 429 at once, without a provider call; a slot is free again when a validation ends', async () => {
      fake.delay('/api/v1/validate', NEVER);
      const held = [validate(t, admins[0]), validate(t, admins[1])];
      await waitFor(`${CAP} provider calls`, () => fake.calls.length === CAP);
      const refused = [await validate(t, admins[2]), await create(t, admins[3])];
      for (const response of refused) {
        expectTooMany(response, 1);
        expect(response.headers['retry-after']).toBe('1');
      }
      expect(fake.calls).toHaveLength(CAP);
      expect(await storedIntegrations(t)).toEqual([]);

      for (const response of await Promise.all(held)) expectUnavailable(response);
      await waitFor('every provider call ended', () => fake.open === 0);
      fake.reset();
      expect((await validate(t, admins[2])).status).toBe(200);
    });

    it('holds under a burst: of 20 validations at once, exactly the cap reach the provider', async () => {
      fake.delay('/api/v1/validate', NEVER);
      const responses = await Promise.all(Array.from({ length: 20 }, (_, i) => validate(t, admins[i % admins.length])));
      const statuses = responses.map((response) => response.status);
      expect(statuses.filter((status) => status === 503)).toHaveLength(CAP);
      expect(statuses.filter((status) => status === 429)).toHaveLength(20 - CAP);
      expect(fake.callsTo('/api/v1/validate')).toHaveLength(CAP);
    });
  });
});
