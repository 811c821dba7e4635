import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { ApiKeyCodec } from '../src/api-keys/api-key-codec';
import { ApiKeysService } from '../src/api-keys/api-keys.service';
import type { Environment } from '../src/config/configuration';
import { redisReachable, TEST_REDIS_URL, uniqueRedisPrefix } from './support/redis';
import { createTestApp, TestApp } from './support/test-app';

/**
 * POST /v1/token failed-attempt limits (docs/api.md, 429):
 * per client address and per key id, only failures count, a limited client is refused before its
 * credentials are checked, shared through Redis when REDIS_URL is set.
 * Client addresses come from X-Forwarded-For, trusted from loopback (TRUST_PROXY=loopback).
 */
const TOO_MANY = { code: 'RESOURCE_EXHAUSTED', message: 'too many requests' };
const BAD_CREDENTIALS = { code: 'UNAUTHENTICATED', message: 'invalid api key credentials' };
const LIMIT = 20;

const REDIS_UP = redisReachable();
if (!REDIS_UP) {
  console.warn(`rate-limit.e2e-spec: Redis at ${TEST_REDIS_URL} is unreachable; the Redis cases are SKIPPED`);
}

/** A client address of its own for each use, so that tests never share a counter. */
const addresses = (() => {
  let n = 0;
  return () => {
    n += 1;
    return `10.${(n >> 16) & 255}.${(n >> 8) & 255}.${n & 255}`;
  };
})();

function exchange(t: TestApp, address: string, value: string | undefined) {
  const request = t.http().post('/v1/token').set('X-Forwarded-For', address);
  return value === undefined ? request : request.set('Authorization', `ApiKey ${value}`);
}

/** A well-formed key value with the right checksum for `keyId` but a secret that was never issued. */
function guess(t: TestApp, keyId: string = randomUUID()): string {
  return t.get(ApiKeysService).codec.format(keyId, ApiKeyCodec.newSecret());
}

async function failTimes(t: TestApp, times: number, address: () => string, value: () => string): Promise<void> {
  for (let i = 0; i < times; i += 1) {
    const response = await exchange(t, address(), value());
    expect([response.status, response.body.code]).toEqual([401, 'UNAUTHENTICATED']);
  }
}

function expectTooMany(response: { status: number; body: unknown; headers: Record<string, string> }, window = 60) {
  expect(response.status).toBe(429);
  expect(response.body).toEqual(TOO_MANY);
  expect(response.headers['retry-after']).toMatch(/^\d+$/);
  const seconds = Number(response.headers['retry-after']);
  expect(seconds).toBeGreaterThanOrEqual(1);
  expect(seconds).toBeLessThanOrEqual(window);
}

type Mode = 'memory' | 'redis';

function modeEnv(mode: Mode, prefix: string): Environment {
  return mode === 'redis' ? { REDIS_URL: TEST_REDIS_URL, REDIS_KEY_PREFIX: prefix } : {};
}

function scenarios(mode: Mode): void {
  let t: TestApp;
  let redis: Redis | undefined;
  const prefix = uniqueRedisPrefix();

  beforeAll(async () => {
    t = await createTestApp({ env: { TRUST_PROXY: 'loopback', ...modeEnv(mode, prefix) } });
    if (mode === 'redis') redis = new Redis(TEST_REDIS_URL);
  });
  afterAll(async () => {
    await t?.close();
    redis?.disconnect();
  });

  it(`refuses an address after ${LIMIT} failures with 429 and Retry-After, before checking its credentials`, async () => {
    const good = await t.createKey(await t.user());
    const attacker = addresses();
    // Both wrong secrets (step 4) and malformed values (step 3) count.
    expect((await exchange(t, attacker, guess(t))).body).toEqual(BAD_CREDENTIALS);
    await failTimes(
      t,
      LIMIT - 6,
      () => attacker,
      () => guess(t),
    );
    for (let i = 0; i < 5; i += 1) {
      const response = await exchange(t, attacker, `not-a-key-${i}`);
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ code: 'UNAUTHENTICATED', message: 'api key invalid' });
    }

    expectTooMany(await exchange(t, attacker, guess(t)));
    // Even the right key is refused: the credentials are not looked at while the address is limited.
    expectTooMany(await exchange(t, attacker, good.value));
    // Requests that never present a key (steps 1-2) are answered as before, and not counted.
    const bare = await exchange(t, attacker, undefined);
    expect(bare.status).toBe(401);
    expect(bare.body).toEqual({ code: 'UNAUTHENTICATED', message: 'authorization header required' });

    // Another client with a good key is not slowed.
    const other = await exchange(t, addresses(), good.value).expect(200);
    expect(other.body.token_type).toBe('Bearer');

    if (redis !== undefined) {
      // The count lives in Redis (shared), under the configured prefix, with the window's expiry.
      expect(await redis.get(`${prefix}token-failures:addr:${attacker}`)).toBe(String(LIMIT));
      const ttl = await redis.pttl(`${prefix}token-failures:addr:${attacker}`);
      expect(ttl).toBeGreaterThan(0);
      expect(ttl).toBeLessThanOrEqual(60_000);
    }
  });

  it('does not count successful exchanges', async () => {
    const good = await t.createKey(await t.user());
    const client = addresses();
    for (let i = 0; i < LIMIT + 5; i += 1) await exchange(t, client, good.value).expect(200);
    // The address still has all its failures left.
    await failTimes(
      t,
      LIMIT,
      () => client,
      () => guess(t),
    );
    expectTooMany(await exchange(t, client, good.value));
  });

  it('limits failures against one key id coming from many addresses', async () => {
    const user = await t.user();
    const target = await t.createKey(user);
    const other = await t.createKey(user);
    await failTimes(t, LIMIT, addresses, () => guess(t, target.id));

    // From a fresh address, the targeted key is refused even with its right secret...
    const fresh = addresses();
    expectTooMany(await exchange(t, fresh, target.value));
    expectTooMany(await exchange(t, fresh, guess(t, target.id)));
    // ...while that address, and the user's other key, are fine.
    await exchange(t, fresh, other.value).expect(200);
    if (redis !== undefined) {
      expect(await redis.get(`${prefix}token-failures:key:${target.id}`)).toBe(String(LIMIT));
    }
  });

  it("counts a revoked key's attempts as failures too", async () => {
    const user = await t.user({ org: `org-${randomUUID()}` });
    const revoked = await t.createKey(user);
    await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set('Authorization', `Bearer ${user.token}`).expect(200);
    const client = addresses();
    for (let i = 0; i < LIMIT; i += 1) {
      const response = await exchange(t, client, revoked.value);
      expect(response.status).toBe(401);
      expect(response.body).toEqual({ code: 'UNAUTHENTICATED', message: 'api key revoked' });
    }
    expectTooMany(await exchange(t, client, revoked.value));
  });

  it('clears the limit when the window closes', async () => {
    const windowed = await createTestApp({
      env: {
        TRUST_PROXY: 'loopback',
        TOKEN_FAILURE_LIMIT_PER_MINUTE: '3',
        TOKEN_FAILURE_WINDOW_SECONDS: '1',
        ...modeEnv(mode, uniqueRedisPrefix()),
      },
    });
    try {
      const good = await windowed.createKey(await windowed.user());
      const client = addresses();
      await failTimes(
        windowed,
        3,
        () => client,
        () => guess(windowed),
      );
      expectTooMany(await exchange(windowed, client, good.value), 1);
      // Poll (no timing assertion): the first answer that is not 429 must be a success.
      const deadline = Date.now() + 10_000;
      let status = 429;
      while (status === 429 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        status = (await exchange(windowed, client, good.value)).status;
      }
      expect(status).toBe(200);
      // A new window: three more failures are allowed before the next refusal.
      await failTimes(
        windowed,
        3,
        () => client,
        () => guess(windowed),
      );
      expectTooMany(await exchange(windowed, client, good.value), 1);
    } finally {
      await windowed.close();
    }
  });
}

describe('POST /v1/token failure limits, in memory', () => {
  scenarios('memory');

  it('counts an IPv6 client by its /64', async () => {
    const t = await createTestApp({ env: { TRUST_PROXY: 'loopback' } });
    try {
      const good = await t.createKey(await t.user());
      let host = 0;
      await failTimes(
        t,
        LIMIT,
        () => `2001:db8:aa:1::${(host += 1).toString(16)}`,
        () => guess(t),
      );
      expectTooMany(await exchange(t, '2001:db8:aa:1:ffff:ffff:ffff:ffff', good.value));
      await exchange(t, '2001:db8:aa:2::1', good.value).expect(200);
    } finally {
      await t.close();
    }
  });

  it('keeps limiting (per instance) when REDIS_URL is set but Redis cannot be reached', async () => {
    const t = await createTestApp({
      env: {
        TRUST_PROXY: 'loopback',
        REDIS_URL: 'redis://127.0.0.1:1',
        REDIS_KEY_PREFIX: uniqueRedisPrefix(),
        TOKEN_FAILURE_LIMIT_PER_MINUTE: '3',
      },
    });
    try {
      const good = await t.createKey(await t.user());
      const client = addresses();
      await failTimes(
        t,
        3,
        () => client,
        () => guess(t),
      );
      expectTooMany(await exchange(t, client, good.value));
      await exchange(t, addresses(), good.value).expect(200);
    } finally {
      await t.close();
    }
  });
});

(REDIS_UP ? describe : describe.skip)('POST /v1/token failure limits, shared through Redis', () => {
  scenarios('redis');

  it('shares the counts between two instances on one database', async () => {
    const env = { TRUST_PROXY: 'loopback', ...modeEnv('redis', uniqueRedisPrefix()) };
    const first = await createTestApp({ env });
    const second = await createTestApp({ env, database: first.database });
    try {
      const good = await first.createKey(await first.user());
      const attacker = addresses();
      await failTimes(
        first,
        LIMIT / 2,
        () => attacker,
        () => guess(first),
      );
      await failTimes(
        second,
        LIMIT / 2,
        () => attacker,
        () => guess(second),
      );
      expectTooMany(await exchange(first, attacker, good.value));
      expectTooMany(await exchange(second, attacker, good.value));

      // Per key id as well: half the guesses through each instance, from different addresses.
      const target = await first.createKey(await first.user());
      await failTimes(first, LIMIT / 2, addresses, () => guess(first, target.id));
      await failTimes(second, LIMIT / 2, addresses, () => guess(second, target.id));
      expectTooMany(await exchange(second, addresses(), target.value));
      // And good traffic from other clients goes on through both.
      await exchange(first, addresses(), good.value).expect(200);
      await exchange(second, addresses(), good.value).expect(200);
    } finally {
      await second.close();
      await first.close();
    }
  });
});
