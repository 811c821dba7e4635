import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import { CredentialUsageCounter } from '../../src/credentials/credential-usage.counter';
import { CredentialUsageRetention } from '../../src/credentials/credential-usage.retention';
import type { TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { clockAdvance, freezeDate } from '../support/clock';
import { apiKeyAuth, bearer, expectError, expectInvalidArgument } from '../support/http-assertions';
import { IdentityProvider } from '../support/identity-provider';
import { createTestApp, DATABASE_KIND, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';
import { workloadForm } from '../support/token-exchange';
import { createIdentity } from '../workload-identities/fixtures';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;
const DAY = 24 * HOUR;
const FORM = 'application/x-www-form-urlencoded';
const SHOP = 'https://usage-shop.example.com';
const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const iso = (ms: number): string => new Date(ms).toISOString();

interface Counts {
  succeeded: number;
  refused: number;
}
interface Bucket extends Counts {
  start: string;
  channels: Record<string, Counts>;
}
interface Usage extends Counts {
  credential_id: string;
  granularity: string;
  from: string;
  to: string;
  channels: Record<string, Counts>;
  buckets: Bucket[];
}

/**
 * Usage over time (docs/api.md#usage-over-time): each key's and workload identity's successful and refused uses per
 * minute and channel, counted in memory and written in batches (the periodic write made rare here: each test flushes),
 * read by the owner and the organization's admins, the busiest for admins, pruned after 30 days. The clock is the
 * test's: minutes are exact.
 */
describe(`usage over time on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let idp: IdentityProvider;
  let shop: { clientId: string; clientSecret: string };
  let workloads: TrustedIssuer;
  let orgs = 0;

  beforeAll(async () => {
    [t, idp] = await Promise.all([
      createTestApp({
        env: {
          API_KEY_LAST_USED_FLUSH_MS: '60000',
          USAGE_FLUSH_MS: '60000',
          TRUST_PROXY: 'loopback',
          TOKEN_FAILURE_LIMIT_PER_MINUTE: '1000',
        },
      }),
      IdentityProvider.start(),
    ]);
    shop = await t.get(ResourceServersService).register('Usage shop', SHOP);
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await IdentityProvider.stopAll();
    await t.close();
  });
  afterEach(() => jest.useRealTimers());

  /** An organization of its own: an admin and two members. */
  async function organization(): Promise<{ admin: TestUser; member: TestUser; other: TestUser }> {
    const org = `usage-${(orgs += 1)}`;
    return {
      admin: await t.user({ org, role: 'admin' }),
      member: await t.user({ org, role: 'member' }),
      other: await t.user({ org, role: 'member' }),
    };
  }

  /** A whole minute some minutes into the next hour: every minute a test uses falls in that hour. */
  function frozenAtNextHour(): number {
    const at = Math.ceil(Date.now() / HOUR) * HOUR + 5 * MINUTE;
    freezeDate(at + 5_000);
    return at;
  }

  const flush = () => t.get(CredentialUsageCounter).flush();
  const read = (user: TestUser, path: string, query: Record<string, string | number> = {}) =>
    t.http().get(path).query(query).set(bearer(user.token));
  const usage = async (user: TestUser, path: string, query: Record<string, string | number>): Promise<Usage> =>
    (await read(user, path, query).expect(200)).body.usage;
  /** The buckets with a use. */
  const used = (body: Usage): Bucket[] => body.buckets.filter((bucket) => bucket.succeeded + bucket.refused > 0);
  const rows = async (): Promise<number> => {
    const [minutes] = await t
      .get(DataSource)
      .query<Array<{ n: string | number }>>('SELECT COUNT(*) AS n FROM credential_usage_minutes');
    const [hours] = await t
      .get(DataSource)
      .query<Array<{ n: string | number }>>('SELECT COUNT(*) AS n FROM credential_usage_hours');
    return Number(minutes.n) + Number(hours.n);
  };

  const exchange = (value: string, headers: Record<string, string> = {}) =>
    t.http().post('/v1/token').set(apiKeyAuth(value)).set(headers);
  const clientCredentials = (id: string, value: string, extra: Record<string, string> = {}) =>
    t
      .http()
      .post('/oauth/token')
      .type(FORM)
      .send(
        new URLSearchParams({
          grant_type: 'client_credentials',
          client_id: id,
          client_secret: value,
          ...extra,
        }).toString(),
      );
  const forwardAuth = (token: string, scope?: string) =>
    t
      .http()
      .get(`/v1/forward-auth?audience=${encodeURIComponent(SHOP)}${scope === undefined ? '' : `&scope=${scope}`}`)
      .set(bearer(token));
  const introspect = (token: string) =>
    t
      .http()
      .post('/oauth/introspect')
      .type(FORM)
      .set('Authorization', basic(shop.clientId, shop.clientSecret))
      .send(new URLSearchParams({ token }).toString());

  it("counts each channel's successes and the refusals of the key, per minute of the clock", async () => {
    const minute0 = frozenAtNextHour();
    const { member } = await organization();
    const key = await t.createKey(member, 'deploy');

    // Minute 0: two exchanges, a client-credentials grant for the shop, its token at the gateway (allowed, then
    // lacking a scope) and introspected by the shop, and a token for Gatehouse's own API introspected (not the shop's).
    const own = (await exchange(key.value).expect(200)).body.access_token as string;
    await exchange(key.value).expect(200);
    const shopToken = (await clientCredentials(key.id, key.value, { resource: SHOP }).expect(200)).body.access_token;
    await forwardAuth(shopToken).expect(200);
    await forwardAuth(shopToken, 'api_keys:manage').expect(403);
    expect((await introspect(shopToken).expect(200)).body.active).toBe(true);
    expect((await introspect(own).expect(200)).body).toEqual({ active: false });

    // Minute 1: one more exchange; then the key revoked, and each channel refuses it.
    await clockAdvance(MINUTE);
    await exchange(key.value).expect(200);
    await t.http().delete(`/v1/user-api-keys/${key.id}`).set(bearer(member.token)).expect(200);
    expectError(await exchange(key.value), 401, 'UNAUTHENTICATED', 'api key revoked', 'api_key_revoked');
    await forwardAuth(shopToken).expect(401);
    expect((await introspect(shopToken).expect(200)).body).toEqual({ active: false });

    // Not written by the requests themselves: nothing until the batch.
    const path = `/v1/user-api-keys/${key.id}/usage`;
    const range = { granularity: 'minute', from: iso(minute0), to: iso(minute0 + 2 * MINUTE) };
    expect((await usage(member, path, range)).succeeded).toBe(0);
    await flush();

    const body = await usage(member, path, range);
    expect(body).toMatchObject({
      credential_id: key.id,
      granularity: 'minute',
      from: iso(minute0),
      to: iso(minute0 + 2 * MINUTE),
      succeeded: 6,
      refused: 5,
      channels: {
        key_exchange: { succeeded: 3, refused: 1 },
        oauth_token: { succeeded: 1, refused: 0 },
        forward_auth: { succeeded: 1, refused: 2 },
        introspection: { succeeded: 1, refused: 2 },
      },
    });
    expect(body.buckets).toEqual([
      {
        start: iso(minute0),
        succeeded: 5,
        refused: 2,
        channels: {
          key_exchange: { succeeded: 2, refused: 0 },
          oauth_token: { succeeded: 1, refused: 0 },
          forward_auth: { succeeded: 1, refused: 1 },
          introspection: { succeeded: 1, refused: 1 },
        },
      },
      {
        start: iso(minute0 + MINUTE),
        succeeded: 1,
        refused: 3,
        channels: {
          key_exchange: { succeeded: 1, refused: 1 },
          forward_auth: { succeeded: 0, refused: 1 },
          introspection: { succeeded: 0, refused: 1 },
        },
      },
    ]);

    // The same counts by hour and by day, from the hours rolled up as they were written; empty buckets are there.
    const hours = await usage(member, path, { granularity: 'hour', from: iso(minute0 - 2 * HOUR), to: iso(minute0) });
    expect(hours.buckets.map((bucket) => [bucket.start, bucket.succeeded, bucket.refused])).toEqual([
      [iso(minute0 - 5 * MINUTE - 2 * HOUR), 0, 0],
      [iso(minute0 - 5 * MINUTE - HOUR), 0, 0],
      [iso(minute0 - 5 * MINUTE), 6, 5],
    ]);
    const days = await usage(member, path, { granularity: 'day' });
    expect(days.buckets).toHaveLength(30);
    expect(used(days)).toEqual([expect.objectContaining({ succeeded: 6, refused: 5 })]);
  });

  it('counts nowhere a key that is not identified: unknown, malformed, or with a wrong secret', async () => {
    frozenAtNextHour();
    const { member } = await organization();
    const key = await t.createKey(member);
    await flush();
    const before = await rows();
    const codec = new ApiKeyCodec('dev');
    // Well-formed, checksums right: the key's id with another secret, and an id no key has.
    await exchange(codec.format(key.id, ApiKeyCodec.newSecret())).expect(401);
    await exchange(codec.format(randomUUID(), ApiKeyCodec.newSecret())).expect(401);
    await exchange('not-a-key').expect(401);
    await clientCredentials(key.id, 'not-a-key').expect(401);
    await forwardAuth('not.a.token').expect(401);
    expect((await introspect('not.a.token').expect(200)).body).toEqual({ active: false });
    // A person's session token names no credential.
    await forwardAuth(member.token).expect(401);
    await flush();
    expect(await rows()).toBe(before);
    expect((await usage(member, `/v1/user-api-keys/${key.id}/usage`, {})).refused).toBe(0);
  });

  it("counts a key's allowlist and rate limit refusals, and its refused scope or resource", async () => {
    const minute0 = frozenAtNextHour();
    const { member } = await organization();
    const fenced = await t.createKey(member, 'fenced', {
      allowed_cidrs: ['203.0.113.0/24'],
      rate_limit: { requests: 2, window_seconds: 60 },
    });
    const inside = { 'X-Forwarded-For': '203.0.113.9' };
    await exchange(fenced.value, inside).expect(200);
    await exchange(fenced.value, { 'X-Forwarded-For': '198.51.100.1' }).expect(403);
    await exchange(fenced.value, inside).expect(200);
    await exchange(fenced.value, inside).expect(429);
    const plain = await t.createKey(member, 'plain');
    await exchange(plain.value).send({ resource: 'https://nowhere.example.com' }).expect(400);
    await exchange(plain.value).send({ scope: 'organization:write' }).expect(400);
    await flush();
    const range = { granularity: 'minute', from: iso(minute0), to: iso(minute0 + MINUTE) };
    expect(used(await usage(member, `/v1/user-api-keys/${fenced.id}/usage`, range))).toEqual([
      expect.objectContaining({ succeeded: 2, refused: 2, channels: { key_exchange: { succeeded: 2, refused: 2 } } }),
    ]);
    expect(used(await usage(member, `/v1/user-api-keys/${plain.id}/usage`, range))).toEqual([
      expect.objectContaining({ succeeded: 0, refused: 2 }),
    ]);
  });

  it("counts a workload identity's exchanges, its refusals and its token's uses, under its own routes", async () => {
    const minute0 = frozenAtNextHour();
    const { admin, member, other } = await organization();
    workloads = await t.get(TrustedIssuersService).add({
      organization: `usage-${orgs}`,
      issuer: idp.issuer,
      kind: 'workloads',
      audience: TEST_ISSUER,
      emailDomains: [],
    });
    const identity = await createIdentity(t, member, workloads, {
      subject: 'repo:acme/usage:ref:refs/heads/main',
      conditions: {},
    });
    const signed = (sub: string) => {
      const now = Math.floor(Date.now() / 1000);
      return idp.sign({ iss: idp.issuer, sub, aud: TEST_ISSUER, iat: now, exp: now + 300 });
    };
    const exchangeAs = async (sub: string, extra: Record<string, string> = {}) =>
      t
        .http()
        .post('/oauth/token')
        .type('form')
        .send(workloadForm(await signed(sub), { client_id: identity.id, ...extra }));
    const exchanged = await exchangeAs(identity.subject, { resource: SHOP });
    expect(exchanged.status).toBe(200);
    const token = exchanged.body.access_token as string;
    // A verified token the named identity does not take: a refused use of that identity.
    expect((await exchangeAs('repo:acme/other:ref:refs/heads/main')).status).toBe(400);
    await forwardAuth(token).expect(200);
    await flush();

    const range = { granularity: 'minute', from: iso(minute0), to: iso(minute0 + MINUTE) };
    const own = await usage(member, `/v1/workload-identities/${identity.id}/usage`, range);
    expect(own.channels).toEqual({
      oauth_token: { succeeded: 1, refused: 1 },
      forward_auth: { succeeded: 1, refused: 0 },
    });
    expect(await usage(admin, `/v1/organization/workload-identities/${identity.id}/usage`, range)).toEqual(own);
    // Someone else's identity is not found; the organization's routes are for admins.
    expectError(
      await read(other, `/v1/workload-identities/${identity.id}/usage`),
      404,
      'NOT_FOUND',
      'workload identity not found',
      'workload_identity_not_found',
    );
    await read(member, `/v1/organization/workload-identities/${identity.id}/usage`).expect(403);
    const outsider = await t.user({ org: `usage-outsider-${orgs}`, role: 'admin' });
    await read(outsider, `/v1/organization/workload-identities/${identity.id}/usage`).expect(404);
  });

  it("shows a key's usage to its owner and the organization's admins only", async () => {
    const { admin, member, other } = await organization();
    const key = await t.createKey(member);
    await exchange(key.value).expect(200);
    await flush();
    const own = await usage(member, `/v1/user-api-keys/${key.id}/usage`, {});
    expect(own).toMatchObject({ granularity: 'hour', succeeded: 1, refused: 0 });
    expect(own.buckets).toHaveLength(24);
    expect(await usage(admin, `/v1/organization/api-keys/${key.id}/usage`, {})).toEqual(own);

    // Another member of the organization (an admin too, on the owner's route): not found, as any key not theirs.
    for (const user of [other, admin]) {
      expectError(
        await read(user, `/v1/user-api-keys/${key.id}/usage`),
        404,
        'NOT_FOUND',
        'api key not found',
        'api_key_not_found',
      );
    }
    // A member on the organization's route: 403; another organization's admin: not found.
    expectError(
      await read(member, `/v1/organization/api-keys/${key.id}/usage`),
      403,
      'PERMISSION_DENIED',
      'insufficient permissions',
      'insufficient_permissions',
    );
    const outsider = await t.user({ org: `usage-outsider-${orgs}`, role: 'admin' });
    await read(outsider, `/v1/organization/api-keys/${key.id}/usage`).expect(404);
    await read(outsider, `/v1/user-api-keys/${key.id}/usage`).expect(404);
    // No token, or a path id that is no UUID.
    await t.http().get(`/v1/user-api-keys/${key.id}/usage`).expect(401);
    expectInvalidArgument(await read(member, '/v1/user-api-keys/not-a-uuid/usage'));
  });

  it('lists the organization’s busiest keys and identities for admins, most uses first', async () => {
    const minute0 = frozenAtNextHour();
    const { admin, member, other } = await organization();
    const busy = await t.createKey(member, 'busy');
    const quiet = await t.createKey(other, 'quiet');
    await t.createKey(other, 'idle');
    for (let n = 0; n < 3; n += 1) await exchange(busy.value).expect(200);
    await exchange(quiet.value).expect(200);
    await t.http().delete(`/v1/user-api-keys/${quiet.id}`).set(bearer(other.token)).expect(200);
    await exchange(quiet.value).expect(401);
    await exchange(quiet.value).expect(401);
    await exchange(quiet.value).expect(401);
    // Another organization's key, busier still: not listed.
    const outsider = await t.user({ org: `usage-outsider-${orgs}`, role: 'admin' });
    const foreign = await t.createKey(outsider);
    for (let n = 0; n < 5; n += 1) await exchange(foreign.value).expect(200);
    await flush();

    const range = { from: iso(minute0), to: iso(minute0 + MINUTE) };
    const top = await read(admin, '/v1/organization/usage/top', range).expect(200);
    expect(top.body).toEqual({
      from: iso(minute0),
      to: iso(minute0 + MINUTE),
      credentials: [
        {
          kind: 'api_key',
          id: quiet.id,
          label: 'quiet',
          status: 'REVOKED',
          user_id: other.userId,
          owner_email: other.email,
          succeeded: 1,
          refused: 3,
        },
        {
          kind: 'api_key',
          id: busy.id,
          label: 'busy',
          status: 'ACTIVE',
          user_id: member.userId,
          owner_email: member.email,
          succeeded: 3,
          refused: 0,
        },
      ],
    });
    const first = await read(admin, '/v1/organization/usage/top', { ...range, limit: 1 }).expect(200);
    expect(first.body.credentials.map((entry: { id: string }) => entry.id)).toEqual([quiet.id]);
    // The last 24 hours by default; a range across hours reads whole hours and the minutes at its ends alike.
    const around = { from: iso(minute0 - 3 * HOUR - 7 * MINUTE), to: iso(minute0 + HOUR + 11 * MINUTE) };
    for (const query of [{}, around]) {
      const again = await read(admin, '/v1/organization/usage/top', query).expect(200);
      expect(again.body.credentials).toEqual(top.body.credentials);
    }
    // Members may not; another organization's admin sees its own only.
    await read(member, '/v1/organization/usage/top').expect(403);
    const theirs = await read(outsider, '/v1/organization/usage/top', range).expect(200);
    expect(theirs.body.credentials.map((entry: { id: string }) => entry.id)).toEqual([foreign.id]);
  });

  it('refuses a range that is empty, too fine for its length, or not a time', async () => {
    const { admin, member } = await organization();
    const key = await t.createKey(member);
    const path = `/v1/user-api-keys/${key.id}/usage`;
    const now = Date.now();
    const refused = [
      [{ from: iso(now), to: iso(now) }, 'from must be before to'],
      [{ from: iso(now), to: iso(now - MINUTE) }, 'from must be before to'],
      [{ granularity: 'minute', from: iso(now - 2 * DAY) }, 'at most 1440 buckets'],
      [{ granularity: 'hour', from: iso(now - 61 * DAY) }, 'at most 1440 buckets'],
    ] as const;
    for (const [query, message] of refused) {
      const response = await read(member, path, query);
      expect([response.status, response.body.reason, response.body.message]).toEqual([
        400,
        'usage_range_invalid',
        expect.stringContaining(message),
      ]);
    }
    const malformed: Array<Record<string, string>> = [
      { granularity: 'week' },
      { from: 'yesterday' },
      { to: '2026-13-01T00:00:00Z' },
      { x: '1' },
    ];
    for (const query of malformed) {
      expectInvalidArgument(await read(member, path, query));
    }
    expectInvalidArgument(await read(admin, '/v1/organization/usage/top', { limit: 101 }));
    expectInvalidArgument(await read(admin, '/v1/organization/usage/top', { granularity: 'hour' }));
    // A day by the minute, from half a minute: rounded out to 1441 minutes, and accepted.
    const halfPast = Math.floor(now / MINUTE) * MINUTE - 30_000;
    const day = await read(member, path, { granularity: 'minute', from: iso(halfPast - DAY), to: iso(halfPast) });
    expect([day.status, day.body.usage?.from, day.body.usage?.to]).toEqual([
      200,
      iso(halfPast - DAY - 30_000),
      iso(halfPast + 30_000),
    ]);
  });

  it("takes a day by the minute that the server's clock ends a minute after the client's", async () => {
    const { member } = await organization();
    const key = await t.createKey(member);
    const path = `/v1/user-api-keys/${key.id}/usage`;
    // The client read its clock at 12:04:59.5 and asked for the day since; the server reads 12:05:00.5.
    const serverNow = frozenAtNextHour() + 500;
    freezeDate(serverNow);
    const clientNow = serverNow - 1_000;
    const day = await read(member, path, { granularity: 'minute', from: iso(clientNow - DAY) });
    expect([day.status, day.body.usage?.from, day.body.usage?.to]).toEqual([
      200,
      iso(serverNow - 500 - MINUTE - DAY),
      iso(serverNow - 500 + MINUTE),
    ]);
    // A minute more is more than the server's clock explains.
    const more = await read(member, path, { granularity: 'minute', from: iso(clientNow - DAY - MINUTE) });
    expect([more.status, more.body.reason, more.body.message]).toEqual([
      400,
      'usage_range_invalid',
      expect.stringContaining('at most 1440 buckets: 1443 are too many'),
    ]);
    // Named by the client, the end is held to the one extra bucket of rounding out.
    const named = await read(member, path, { granularity: 'minute', from: iso(clientNow - DAY), to: iso(serverNow) });
    expect([named.status, named.body.reason]).toEqual([400, 'usage_range_invalid']);
  });

  it('adds the counts of every instance, and prunes those older than 30 days', async () => {
    const { member } = await organization();
    const key = await t.createKey(member);
    const second = await createTestApp({
      database: t.database,
      env: { API_KEY_LAST_USED_FLUSH_MS: '60000', USAGE_FLUSH_MS: '60000' },
    });
    try {
      await exchange(key.value).expect(200);
      await second.http().post('/v1/token').set(apiKeyAuth(key.value)).expect(200);
      await second.http().post('/v1/token').set(apiKeyAuth(key.value)).expect(200);
      await Promise.all([flush(), second.get(CredentialUsageCounter).flush()]);
    } finally {
      await second.close();
    }
    const path = `/v1/user-api-keys/${key.id}/usage`;
    expect((await usage(member, path, {})).succeeded).toBe(3);

    // Counts of 31 and of 29 days ago (as an instance whose clock read then would count them).
    const now = Date.now();
    const counter = t.get(CredentialUsageCounter);
    counter.count('api_key', key.id, member.organizationId, 'key_exchange', true, now - 31 * DAY);
    counter.count('api_key', key.id, member.organizationId, 'forward_auth', false, now - 29 * DAY);
    await flush();
    const month = { granularity: 'day', from: iso(now - 32 * DAY), to: iso(now) };
    expect(await usage(member, path, month)).toMatchObject({ succeeded: 4, refused: 1 });

    expect(await t.get(CredentialUsageRetention).prune({ now: new Date(now), pauseMs: 0 })).toBeGreaterThanOrEqual(2);
    expect(await usage(member, path, month)).toMatchObject({ succeeded: 3, refused: 1 });
    const [old] = await t
      .get(DataSource)
      .query<Array<{ n: string | number }>>(
        `SELECT COUNT(*) AS n FROM credential_usage_minutes WHERE credential_id = '${key.id}' AND minute < ${Math.floor((now - 30 * DAY) / MINUTE)}`,
      );
    expect(Number(old.n)).toBe(0);
  });
});
