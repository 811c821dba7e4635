import type { Test } from 'supertest';
import { DataSource } from 'typeorm';
import type { Environment } from '../../src/config/configuration';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { bearer, decodeJwt, expectError } from '../support/http-assertions';
import { redisReachable, TEST_REDIS_URL, uniqueRedisPrefix } from '../support/redis';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

/**
 * Where a key's allowlist and rate limit are enforced (docs/api.md#allowlists-and-rate-limits,
 * docs/resource-servers.md#allowlists-and-rate-limits): the exchange (POST /v1/token and the client-credentials grant),
 * Gatehouse's own API, forward auth, introspection with client_ip; the claim verifiers read; the rate limit at the
 * exchange and at forward auth, 429 with Retry-After and the RateLimit fields, shared by two instances through Redis.
 * The records themselves: test/api-keys/key-policies.e2e-spec.ts.
 */
const ORDERS = 'https://orders.example.com';
const FORM = 'application/x-www-form-urlencoded';
const NOT_ALLOWED = {
  code: 'PERMISSION_DENIED',
  message: 'api key not allowed from this address',
  reason: 'address_not_allowed',
};
const TOO_MANY = { code: 'RESOURCE_EXHAUSTED', message: 'too many requests', reason: 'credential_rate_limited' };
const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

const REDIS_UP = redisReachable();
if (!REDIS_UP) {
  console.warn(
    `key-policies-enforcement.e2e-spec: Redis at ${TEST_REDIS_URL} is unreachable; the Redis cases are SKIPPED`,
  );
}

/** The requests of the suite, against one instance; `from` is the X-Forwarded-For a client behind a proxy sends. */
function client(t: TestApp) {
  const withAddress = (request: Test, from?: string): Test =>
    from === undefined ? request : request.set('X-Forwarded-For', from);
  return {
    exchange: (value: string, from?: string, body?: object) => {
      const request = withAddress(t.http().post('/v1/token').set('Authorization', `ApiKey ${value}`), from);
      return body === undefined ? request : request.send(body);
    },
    grant: (keyId: string, value: string, from?: string) =>
      withAddress(t.http().post('/oauth/token').type(FORM), from)
        .set('Authorization', basic(keyId, value))
        .send('grant_type=client_credentials&resource=' + encodeURIComponent(ORDERS)),
    forwardAuth: (token: string, from?: string) =>
      withAddress(
        t
          .http()
          .get(`/v1/forward-auth?audience=${encodeURIComponent(ORDERS)}&scope=api_keys:read`)
          .set(bearer(token)),
        from,
      ),
  };
}

function gatehouse(env: Environment, database?: TestApp['database']): Promise<TestApp> {
  return createTestApp({ env, database });
}

describe(`API key allowlists and rate limits: enforcement, on ${DATABASE_KIND}`, () => {
  describe('behind a trusted proxy (TRUST_PROXY=loopback: the address is X-Forwarded-For)', () => {
    let t: TestApp;
    let orders: { clientId: string; clientSecret: string };
    let orgs = 0;
    beforeAll(async () => {
      t = await gatehouse({ TRUST_PROXY: 'loopback' });
      orders = await t.get(ResourceServersService).register('Orders', ORDERS);
    });
    afterAll(() => t.close());

    const user = (role: TestUser['role'] = 'member'): Promise<TestUser> => t.user({ org: `enforced-${++orgs}`, role });
    const tokenFrom = async (value: string, from: string, resource?: string): Promise<string> =>
      (
        await client(t)
          .exchange(value, from, resource === undefined ? undefined : { resource })
          .expect(200)
      ).body.access_token as string;
    const introspect = (token: string, clientIp?: string) =>
      t
        .http()
        .post('/oauth/introspect')
        .type(FORM)
        .set('Authorization', basic(orders.clientId, orders.clientSecret))
        .send(new URLSearchParams(clientIp === undefined ? { token } : { token, client_ip: clientIp }).toString());

    it('exchanges the key from an address inside its list only: 403, audited, elsewhere; the token carries the list', async () => {
      const owner = await user();
      const key = await t.createKey(owner, 'office', { allowed_cidrs: ['203.0.113.0/24', '2001:db8::/32'] });
      for (const from of ['203.0.113.77', '2001:db8:ab::1', '::ffff:203.0.113.1']) {
        const token = await tokenFrom(key.value, from);
        expect(decodeJwt(token).payload.allowed_cidrs).toEqual(['203.0.113.0/24', '2001:db8::/32']);
      }
      for (const from of ['198.51.100.1', '2001:db9::1']) {
        const refused = await client(t).exchange(key.value, from);
        expectError(refused, 403, NOT_ALLOWED.code, NOT_ALLOWED.message, NOT_ALLOWED.reason);
        expect(refused.headers['www-authenticate']).toBeUndefined();
      }
      const events: Array<{ client_ip: string }> = await t
        .get(DataSource)
        .query(
          `SELECT reason, client_ip, actor_user_id, organization_id FROM audit_events WHERE action = 'token.exchange_failed' AND target_id = '${key.id}'`,
        );
      events.sort((a, b) => a.client_ip.localeCompare(b.client_ip));
      expect(events).toEqual([
        {
          reason: 'address_not_allowed',
          client_ip: '198.51.100.1',
          actor_user_id: owner.userId,
          organization_id: owner.organizationId,
        },
        {
          reason: 'address_not_allowed',
          client_ip: '2001:db9::1',
          actor_user_id: owner.userId,
          organization_id: owner.organizationId,
        },
      ]);
      // A key without a list: no claim.
      const open = await t.createKey(owner, 'anywhere');
      expect(decodeJwt(await tokenFrom(open.value, '198.51.100.1')).payload.allowed_cidrs).toBeUndefined();
    });

    it('grants client credentials from inside the list only (403 unauthorized_client elsewhere)', async () => {
      const owner = await user();
      const key = await t.createKey(owner, 'grant', { allowed_cidrs: ['203.0.113.0/24'] });
      await client(t).grant(key.id, key.value, '203.0.113.5').expect(200);
      const refused = await client(t).grant(key.id, key.value, '192.0.2.5');
      expect(refused.status).toBe(403);
      expect(refused.body).toEqual({
        error: 'unauthorized_client',
        error_description: 'api key not allowed from this address',
        reason: 'address_not_allowed',
      });
    });

    it("refuses the key's tokens on Gatehouse's own API from outside the list (403)", async () => {
      const owner = await user();
      const key = await t.createKey(owner, 'api', { allowed_cidrs: ['203.0.113.0/24'] });
      const token = await tokenFrom(key.value, '203.0.113.5');
      const read = (from: string) =>
        t.http().get(`/v1/user-api-keys/${key.id}`).set(bearer(token)).set('X-Forwarded-For', from);
      await read('203.0.113.6').expect(200);
      expectError(await read('192.0.2.6'), 403, NOT_ALLOWED.code, NOT_ALLOWED.message, NOT_ALLOWED.reason);
    });

    it('answers forward auth for the address the gateway forwards: 403 outside, 200 inside and never cacheable', async () => {
      const owner = await user();
      const key = await t.createKey(owner, 'gateway', { allowed_cidrs: ['203.0.113.0/24'] });
      const token = await tokenFrom(key.value, '203.0.113.5', ORDERS);
      const allowed = await client(t).forwardAuth(token, '203.0.113.99').expect(200);
      expect(allowed.headers['x-gatehouse-api-key-id']).toBe(key.id);
      expect(allowed.headers['cache-control']).toBe('no-store');
      expect(allowed.headers['x-accel-expires']).toBe('0');
      const refused = await client(t).forwardAuth(token, '192.0.2.99');
      expectError(refused, 403, NOT_ALLOWED.code, NOT_ALLOWED.message, NOT_ALLOWED.reason);
      expect(refused.headers['cache-control']).toBe('no-store');
      // A key without policies keeps its cacheable answer.
      const plain = await tokenFrom((await t.createKey(owner, 'plain')).value, '192.0.2.1', ORDERS);
      const cached = await client(t).forwardAuth(plain, '192.0.2.1').expect(200);
      expect(cached.headers['cache-control']).toBe('private, max-age=1');
    });

    it('answers introspection inactive for a client_ip outside the list, and gives the list to a caller without one', async () => {
      const owner = await user();
      const key = await t.createKey(owner, 'introspected', { allowed_cidrs: ['203.0.113.0/24'] });
      const token = await tokenFrom(key.value, '203.0.113.5', ORDERS);
      const inside = await introspect(token, '203.0.113.200').expect(200);
      expect(inside.body).toMatchObject({ active: true, client_id: key.id, allowed_cidrs: ['203.0.113.0/24'] });
      expect((await introspect(token, '192.0.2.1').expect(200)).body).toStrictEqual({ active: false });
      expect((await introspect(token, '::ffff:192.0.2.1').expect(200)).body).toStrictEqual({ active: false });
      expect((await introspect(token).expect(200)).body).toMatchObject({
        active: true,
        allowed_cidrs: ['203.0.113.0/24'],
      });
      const malformed = await introspect(token, '203.0.113.0/24');
      expect(malformed.status).toBe(400);
      expect(malformed.body).toEqual({
        error: 'invalid_request',
        error_description: 'client_ip is not an IP address',
        reason: 'introspection_request_invalid',
      });
      // A key without a list: any client_ip, and no allowed_cidrs in the answer.
      const plain = await tokenFrom((await t.createKey(owner, 'plain')).value, '192.0.2.1', ORDERS);
      const open = await introspect(plain, '192.0.2.1').expect(200);
      expect(open.body.active).toBe(true);
      expect(open.body).not.toHaveProperty('allowed_cidrs');
    });

    it("applies a PATCH of the list at once where the key is read live; the token's claim keeps the list it was minted with", async () => {
      const owner = await user();
      const key = await t.createKey(owner, 'narrowed', { allowed_cidrs: ['203.0.113.0/24', '198.51.100.0/24'] });
      const token = await tokenFrom(key.value, '198.51.100.1', ORDERS);
      await client(t).forwardAuth(token, '198.51.100.2').expect(200);
      await t
        .http()
        .patch(`/v1/user-api-keys/${key.id}`)
        .set(bearer(owner.token))
        .send({ allowed_cidrs: ['203.0.113.0/24'] })
        .expect(200);
      expect((await client(t).forwardAuth(token, '198.51.100.2')).status).toBe(403);
      expect((await introspect(token, '198.51.100.2').expect(200)).body).toStrictEqual({ active: false });
      await client(t).forwardAuth(token, '203.0.113.2').expect(200);
      expect(decodeJwt(token).payload.allowed_cidrs).toEqual(['203.0.113.0/24', '198.51.100.0/24']);
      expectError(
        await client(t).exchange(key.value, '198.51.100.1'),
        403,
        NOT_ALLOWED.code,
        NOT_ALLOWED.message,
        NOT_ALLOWED.reason,
      );
    });

    it('limits the exchange: 429 with Retry-After and the RateLimit fields, not audited; the grant alike', async () => {
      const owner = await user();
      const key = await t.createKey(owner, 'limited', { rate_limit: { requests: 2, window_seconds: 60 } });
      await client(t).exchange(key.value, '192.0.2.10').expect(200);
      await client(t).grant(key.id, key.value, '192.0.2.11').expect(200);
      const refused = await client(t).exchange(key.value, '192.0.2.12');
      expectError(refused, 429, TOO_MANY.code, TOO_MANY.message, TOO_MANY.reason);
      expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(60);
      expect(refused.headers['ratelimit-policy']).toBe('"api-key";q=2;w=60');
      expect(refused.headers['ratelimit']).toBe(`"api-key";r=0;t=${refused.headers['retry-after']}`);
      const grant = await client(t).grant(key.id, key.value, '192.0.2.13');
      expect([grant.status, grant.body.error]).toEqual([429, 'temporarily_unavailable']);
      expect(grant.headers['ratelimit-policy']).toBe('"api-key";q=2;w=60');
      const [audited] = await t
        .get(DataSource)
        .query(
          `SELECT COUNT(*) AS n FROM audit_events WHERE target_id = '${key.id}' AND action = 'token.exchange_failed'`,
        );
      expect(Number(audited.n)).toBe(0);
      // Another key of the same owner is not limited by it.
      await client(t)
        .exchange((await t.createKey(owner, 'other')).value, '192.0.2.12')
        .expect(200);
    });

    it('limits forward auth by the same count: each answer one request, its fields on every answer', async () => {
      const owner = await user();
      const key = await t.createKey(owner, 'gateway limited', { rate_limit: { requests: 3, window_seconds: 3600 } });
      const token = await tokenFrom(key.value, '192.0.2.20', ORDERS);
      const first = await client(t).forwardAuth(token, '192.0.2.21').expect(200);
      expect(first.headers['ratelimit-policy']).toBe('"api-key";q=3;w=3600');
      expect(first.headers['ratelimit']).toMatch(/^"api-key";r=1;t=\d+$/);
      expect(first.headers['cache-control']).toBe('no-store');
      // A refusal for the scope is an answer about the key: counted, with its fields.
      const scoped = await t
        .http()
        .get(`/v1/forward-auth?audience=${encodeURIComponent(ORDERS)}&scope=api_keys:manage`)
        .set(bearer(token));
      expect(scoped.status).toBe(403);
      expect(scoped.headers['ratelimit']).toMatch(/^"api-key";r=0;t=\d+$/);
      const refused = await client(t).forwardAuth(token, '192.0.2.22');
      expectError(refused, 429, TOO_MANY.code, TOO_MANY.message, TOO_MANY.reason);
      expect(refused.headers['retry-after']).toMatch(/^\d+$/);
      expect(refused.headers['ratelimit-policy']).toBe('"api-key";q=3;w=3600');
      expect(refused.headers['cache-control']).toBe('no-store');
      // Removing the limit lets the key through at once.
      await t
        .http()
        .patch(`/v1/user-api-keys/${key.id}`)
        .set(bearer(owner.token))
        .send({ rate_limit: null })
        .expect(200);
      const free = await client(t).forwardAuth(token, '192.0.2.23').expect(200);
      expect(free.headers['ratelimit']).toBeUndefined();
    });
  });

  describe('without a trusted proxy (TRUST_PROXY off: the address is the connection peer)', () => {
    let t: TestApp;
    beforeAll(async () => {
      t = await gatehouse({ TOKEN_FAILURE_LIMIT_PER_MINUTE: '2' });
    });
    afterAll(() => t.close());

    it('checks the peer, whatever X-Forwarded-For a client writes; refusals count as failures of the address', async () => {
      const owner = await t.user({ org: 'untrusted' });
      const loopback = await t.createKey(owner, 'loopback', { allowed_cidrs: ['127.0.0.0/8', '::1/128'] });
      const elsewhere = await t.createKey(owner, 'elsewhere', { allowed_cidrs: ['203.0.113.0/24'] });
      await client(t).exchange(loopback.value, '192.0.2.1').expect(200);
      expectError(
        await client(t).exchange(elsewhere.value, '203.0.113.1'),
        403,
        NOT_ALLOWED.code,
        NOT_ALLOWED.message,
        NOT_ALLOWED.reason,
      );
      expectError(
        await client(t).exchange(elsewhere.value),
        403,
        NOT_ALLOWED.code,
        NOT_ALLOWED.message,
        NOT_ALLOWED.reason,
      );
      // Two refusals were the address's two failures: the next attempt is refused before its key is looked at.
      expectError(
        await client(t).exchange(loopback.value),
        429,
        TOO_MANY.code,
        TOO_MANY.message,
        'too_many_failed_exchanges',
      );
    });
  });

  (REDIS_UP ? describe : describe.skip)('across two instances sharing one limit through Redis', () => {
    let first: TestApp;
    let second: TestApp;
    beforeAll(async () => {
      const env = { TRUST_PROXY: 'loopback', REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: uniqueRedisPrefix() };
      first = await gatehouse(env);
      second = await gatehouse(env, first.database);
      await first.get(ResourceServersService).register('Orders', ORDERS);
    });
    afterAll(async () => {
      await second?.close();
      await first?.close();
    });

    it('counts the exchanges and forward-auth answers of both instances against the one limit', async () => {
      const owner = await first.user({ org: 'shared-limit' });
      const key = await first.createKey(owner, 'shared', { rate_limit: { requests: 4, window_seconds: 60 } });
      const token = (await client(first).exchange(key.value, '192.0.2.30', { resource: ORDERS }).expect(200)).body
        .access_token as string;
      const atSecond = await client(second).forwardAuth(token, '192.0.2.31').expect(200);
      expect(atSecond.headers['ratelimit']).toMatch(/^"api-key";r=2;t=\d+$/);
      await client(first).forwardAuth(token, '192.0.2.32').expect(200);
      await client(second).exchange(key.value, '192.0.2.33').expect(200);
      for (const instance of [first, second]) {
        const refused = await client(instance).forwardAuth(token, '192.0.2.34');
        expectError(refused, 429, TOO_MANY.code, TOO_MANY.message, TOO_MANY.reason);
        expect(refused.headers['ratelimit-policy']).toBe('"api-key";q=4;w=60');
        expect(refused.headers['retry-after']).toMatch(/^\d+$/);
        expectError(
          await client(instance).exchange(key.value, '192.0.2.35'),
          429,
          TOO_MANY.code,
          TOO_MANY.message,
          TOO_MANY.reason,
        );
      }
    });
  });
});
