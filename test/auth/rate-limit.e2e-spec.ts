import { randomUUID } from 'node:crypto';
import { Redis } from 'ioredis';
import { DataSource } from 'typeorm';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import { ApiKeysService } from '../../src/api-keys/api-keys.service';
import { KeyExchangeRules } from '../../src/auth/key-exchange';
import { AuditEvent } from '../../src/audit/audit-event.entity';
import type { Environment } from '../../src/config/configuration';
import { redisReachable, TEST_REDIS_URL, uniqueRedisPrefix } from '../support/redis';
import { createTestApp, TestApp } from '../support/test-app';
import { pause, waitFor } from '../support/wait';

/**
 * POST /v1/token failed-attempt limits (docs/operations.md#abuse-limits-on-post-v1token, 429):
 * per client address, every 401 counts and successes do not, a limited client is refused before
 * its credentials are checked, parallel bursts stay within the limit, nobody can get another
 * client's key refused, shared through Redis when REDIS_URL is set.
 * Client addresses come from X-Forwarded-For, trusted from loopback (TRUST_PROXY=loopback).
 */
const TOO_MANY = { code: 'RESOURCE_EXHAUSTED', message: 'too many requests', reason: 'too_many_failed_exchanges' };
const BAD_CREDENTIALS = {
  code: 'UNAUTHENTICATED',
  message: 'invalid api key credentials',
  reason: 'api_key_invalid_credentials',
};
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

/** Refused exchanges stored in the audit trail with this client address. */
function storedFailures(t: TestApp, address: string): Promise<number> {
  return t.get(DataSource).getRepository(AuditEvent).countBy({ action: 'token.exchange_failed', clientIp: address });
}

const BURST = 200;
/** How much longer each key lookup takes during a burst: a database under load, so that the burst's checks overlap. */
const SLOW_LOOKUP_MS = 200;

/** Runs `run` with every key lookup of `t` made SLOW_LOOKUP_MS slower, and counts the lookups. */
async function withSlowLookups<T>(t: TestApp, run: () => Promise<T>): Promise<{ result: T; lookups: number }> {
  const service = t.get(KeyExchangeRules);
  const checkKey = service.checkKey.bind(service);
  let lookups = 0;
  const spy = jest.spyOn(service, 'checkKey').mockImplementation(async (parsed, nowMs) => {
    lookups += 1;
    await pause(SLOW_LOOKUP_MS); // the database's configured slowness
    return checkKey(parsed, nowMs);
  });
  try {
    return { result: await run(), lookups };
  } finally {
    spy.mockRestore();
  }
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
      expect(response.body).toEqual({
        code: 'UNAUTHENTICATED',
        message: 'api key invalid',
        reason: 'api_key_malformed',
      });
    }

    expectTooMany(await exchange(t, attacker, guess(t)));
    // Even the right key is refused: the credentials are not looked at while the address is limited.
    expectTooMany(await exchange(t, attacker, good.value));
    // So is a request without a key: the limit comes before any check.
    expectTooMany(await exchange(t, attacker, undefined));

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

  it('counts refusals that name no key (no header, another scheme) like any other 401, without storing them', async () => {
    const good = await t.createKey(await t.user());
    const client = addresses();
    for (let i = 0; i < LIMIT; i += 1) {
      const request = exchange(t, client, undefined);
      const response = await (i % 2 === 0 ? request : request.set('Authorization', `Basic dXNlcjpwYXNz${i}`));
      expect(response.status).toBe(401);
      expect(response.body.message).toBe(
        i % 2 === 0 ? 'authorization header required' : 'authorization header must use ApiKey scheme',
      );
    }
    expectTooMany(await exchange(t, client, good.value));
    expect(await storedFailures(t, client)).toBe(0);
  });

  it("never lets a third party on other addresses get a key's owner refused", async () => {
    const user = await t.user();
    const target = await t.createKey(user);
    const owner = addresses();
    // The key id is public (every access token carries it as `client_id`): three addresses use up their failures on it.
    const thirdParty = [addresses(), addresses(), addresses()];
    for (const address of thirdParty) {
      await failTimes(
        t,
        LIMIT,
        () => address,
        () => guess(t, target.id),
      );
      expectTooMany(await exchange(t, address, guess(t, target.id)));
    }
    // The owner, from its own address, is not refused: not with its key, and not for a typo either.
    const response = await exchange(t, owner, target.value).expect(200);
    expect(response.body.token_type).toBe('Bearer');
    expect((await exchange(t, owner, guess(t, target.id))).body).toEqual(BAD_CREDENTIALS);
    await exchange(t, owner, target.value).expect(200);
    if (redis !== undefined) expect(await redis.keys(`${prefix}token-failures:key:*`)).toEqual([]);
  });

  describe(`a burst of ${BURST} parallel failures from one address gets no more than the limit through`, () => {
    it.each<[string, (t: TestApp) => () => string | undefined]>([
      ['wrong secrets, each a new guess', (app) => () => guess(app)],
      [
        'one wrong value, repeated',
        (app) => {
          const value = guess(app);
          return () => value;
        },
      ],
      ['malformed values', () => () => `not-a-key-${randomUUID()}`],
      ['no Authorization header', () => () => undefined],
    ])('%s', async (kind, values) => {
      const attacker = addresses();
      const next = values(t);
      const { result: responses, lookups } = await withSlowLookups(t, () =>
        Promise.all(Array.from({ length: BURST }, () => exchange(t, attacker, next()))),
      );
      const passed = responses.filter((response) => response.status === 401).length;
      const refused = responses.filter((response) => response.status === 429).length;
      expect(passed).toBe(LIMIT);
      expect(refused).toBe(BURST - LIMIT);
      expect(lookups).toBeLessThanOrEqual(LIMIT);
      expectTooMany(responses.find((response) => response.status === 429)!);
      // Refusals naming a key id are stored, one row per 401 (the others are logged): never one per request.
      const namesKey = kind.startsWith('wrong') || kind.startsWith('one wrong');
      expect(await storedFailures(t, attacker)).toBe(namesKey ? LIMIT : 0);
      if (redis !== undefined) {
        expect(await redis.get(`${prefix}token-failures:addr:${attacker}`)).toBe(String(LIMIT));
      }
    });
  });

  it(`never refuses a burst of good exchanges, nor counts it: ${BURST} parallel of one key, then of ten keys`, async () => {
    const user = await t.user();
    const keys = await Promise.all(Array.from({ length: 10 }, () => t.createKey(user)));
    const client = addresses();
    const oneKey = await withSlowLookups(t, () =>
      Promise.all(Array.from({ length: BURST }, () => exchange(t, client, keys[0].value))),
    );
    const tenKeys = await withSlowLookups(t, () =>
      Promise.all(Array.from({ length: BURST }, (_, i) => exchange(t, client, keys[i % keys.length].value))),
    );
    const statuses = [...oneKey.result, ...tenKeys.result].map((response) => response.status);
    expect(statuses).toEqual(Array(2 * BURST).fill(200));
    if (redis !== undefined) expect(await redis.get(`${prefix}token-failures:addr:${client}`)).toBeNull();
    // Nothing of the bursts was counted: the address has all its failures left.
    await failTimes(
      t,
      LIMIT,
      () => client,
      () => guess(t),
    );
    expectTooMany(await exchange(t, client, keys[0].value));
  });

  it('keeps a forged X-Forwarded-For that is not an address out of the limiter keys and the audit trail', async () => {
    const forged = ['garbage', '<script>alert(1)</script>', `203.0.113.7${'x'.repeat(4000)}`, 'f'.repeat(60)];
    const ownPrefix = uniqueRedisPrefix();
    // TRUST_PROXY=true (refused in production) takes the left-most entry, whatever a client wrote there.
    const trusting = await createTestApp({
      env: { TRUST_PROXY: 'true', TOKEN_FAILURE_LIMIT_PER_MINUTE: String(forged.length), ...modeEnv(mode, ownPrefix) },
    });
    try {
      const good = await trusting.createKey(await trusting.user());
      for (const value of forged)
        expect((await exchange(trusting, value, guess(trusting))).body).toEqual(BAD_CREDENTIALS);
      // Each counted against the connection's own address: yet another forged value, or none, is refused...
      expectTooMany(await exchange(trusting, 'yet-another-value', good.value));
      expectTooMany(await trusting.http().post('/v1/token').set('Authorization', `ApiKey ${good.value}`));
      // ...while a forwarded value that is an address is still taken as the client's.
      await exchange(trusting, '203.0.113.50', good.value).expect(200);

      const rows = await trusting.get(DataSource).getRepository(AuditEvent).findBy({ action: 'token.exchange_failed' });
      expect(rows).toHaveLength(forged.length);
      for (const row of rows) expect(row.clientIp).toMatch(/^(::ffff:)?127\.0\.0\.1$/);
      if (redis !== undefined) {
        const keys = await redis.keys(`${ownPrefix}*`);
        expect(keys.map((key) => key.slice(ownPrefix.length))).toEqual(['token-failures:addr:127.0.0.1']);
      }
    } finally {
      await trusting.close();
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
      expect(response.body).toEqual({ code: 'UNAUTHENTICATED', message: 'api key revoked', reason: 'api_key_revoked' });
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
      const status = await waitFor(
        'an answer other than 429',
        async () => {
          const answered = (await exchange(windowed, client, good.value)).status;
          return answered === 429 ? undefined : answered;
        },
        { everyMs: 100 },
      );
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

      // Failures on one key id from many addresses through both instances never refuse its owner.
      const target = await first.createKey(await first.user());
      await failTimes(first, LIMIT, addresses, () => guess(first, target.id));
      await failTimes(second, LIMIT, addresses, () => guess(second, target.id));
      await exchange(second, addresses(), target.value).expect(200);
      await exchange(first, addresses(), target.value).expect(200);
      // And good traffic from other clients goes on through both.
      await exchange(first, addresses(), good.value).expect(200);
      await exchange(second, addresses(), good.value).expect(200);
    } finally {
      await second.close();
      await first.close();
    }
  });
});
