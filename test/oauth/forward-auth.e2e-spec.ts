import { ShutdownState } from '../../src/common/shutdown.state';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { freezeDate, nextWholeSecond } from '../support/clock';
import { createTestApp, TestApp, TestUser } from '../support/test-app';

/**
 * /v1/forward-auth (docs/resource-servers.md#forward-auth): any method, headers in, 200 with who the request is or the
 * RFC 6750 challenge, live state as introspection. The gateway names its audience, and the token must be for it
 * (docs/adr/0033-one-audience-one-place.md). The real nginx in front of it: nginx.e2e-spec.ts.
 */
describe('/v1/forward-auth', () => {
  let t: TestApp;
  let member: TestUser;
  let key: { id: string; value: string };
  /** The member's token for the shop: what a client of the shop sends through its gateway. */
  let token: string;
  const audience = 'https://shop.example.com';
  const billing = 'https://billing.example.com';
  const atShop = `?audience=${encodeURIComponent(audience)}`;

  beforeAll(async () => {
    t = await createTestApp();
    member = await t.user({ org: 'forward', role: 'member' });
    key = await t.createKey(member, 'gateway');
    await t.get(ResourceServersService).register('Shop', audience);
    await t.get(ResourceServersService).register('Billing', billing);
    token = await t.exchange(key.value, { resource: audience });
  });

  afterAll(() => t.close());

  const check = (authorization?: string, query = atShop, method: 'get' | 'post' | 'delete' | 'patch' = 'get') => {
    const request = t.http()[method](`/v1/forward-auth${query}`);
    return authorization === undefined ? request : request.set('Authorization', authorization);
  };
  /** A refusal: never kept by a cache, and said to depend on the Authorization header. */
  const expectUncacheable = (response: { headers: Record<string, string> }) => {
    expect([response.headers['cache-control'], response.headers.vary]).toEqual(['no-store', 'Authorization']);
  };

  it('allows a live access token for any method: empty body, who it is, cacheable for FORWARD_AUTH_CACHE_SECONDS per token', async () => {
    for (const method of ['get', 'post', 'delete', 'patch'] as const) {
      const response = await check(`Bearer ${token}`, atShop, method).expect(200);
      expect(response.text).toBe('');
      expect(response.headers).toMatchObject({
        'x-gatehouse-user-id': member.userId,
        'x-gatehouse-organization-id': member.organizationId,
        'x-gatehouse-credential-id': key.id,
        // Deprecated, the same value (docs/resource-servers.md).
        'x-gatehouse-api-key-id': key.id,
        'x-gatehouse-scope': 'api_keys:read integrations:read',
        'cache-control': 'private, max-age=1',
        'x-accel-expires': '1',
        vary: 'Authorization',
      });
      // nginx reads them in order, and stores a `private` answer only when X-Accel-Expires comes first.
      const names = Object.keys(response.headers);
      expect(names.indexOf('x-accel-expires')).toBeLessThan(names.indexOf('cache-control'));
    }
    // A body of any type is not read (a gateway may pass the client's along).
    await t
      .http()
      .post(`/v1/forward-auth${atShop}`)
      .set('Authorization', `Bearer ${token}`)
      .type('text/plain')
      .send('x')
      .expect(200);
  });

  it('401 with the RFC 6750 challenge: no error without credentials, invalid_token otherwise; never cached', async () => {
    const none = await check().expect(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="gatehouse"');
    expect(none.body).toEqual({
      code: 'UNAUTHENTICATED',
      message: 'user not authenticated',
      reason: 'token_missing',
    });
    expectUncacheable(none);
    for (const header of [`Bearer ${token}x`, 'Bearer', `Basic ${token}`, `Bearer ${member.token}`]) {
      const response = await check(header).expect(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="gatehouse", error="invalid_token"');
      expectUncacheable(response);
    }
  });

  it('a missing or bad token is 401 before anything is said about the audience or the parameters', async () => {
    const gatewayMistakes = [
      '',
      '?audience=https://nowhere.example.com',
      '?audience=gatehouse',
      `${atShop}&scope=everything`,
    ];
    for (const query of [...gatewayMistakes, `${atShop}&audience=${encodeURIComponent(billing)}`]) {
      for (const authorization of [undefined, 'Bearer not-a-token', `Bearer ${member.token}`]) {
        const response = await check(authorization, query);
        expect([query, authorization, response.status]).toEqual([query, authorization, 401]);
        expectUncacheable(response);
      }
    }
  });

  it('403 insufficient_scope naming what is required (space- or comma-separated); never cached', async () => {
    await check(`Bearer ${token}`, `${atShop}&scope=api_keys:read,integrations:read`).expect(200);
    const response = await check(`Bearer ${token}`, `${atShop}&scope=api_keys:read%20api_keys:create`).expect(403);
    expect(response.headers['www-authenticate']).toBe(
      'Bearer realm="gatehouse", error="insufficient_scope", scope="api_keys:read api_keys:create"',
    );
    expect(response.body).toEqual({
      code: 'PERMISSION_DENIED',
      message: 'insufficient permissions',
      reason: 'insufficient_scope',
    });
    expectUncacheable(response);
  });

  it('400 for a gateway misconfigured, once the token is known: no audience, an unknown permission, a repeated parameter; never cached', async () => {
    for (const query of [
      '',
      '?scope=api_keys:read',
      '?audience=',
      `${atShop}&scope=everything`,
      `${atShop}&audience=${encodeURIComponent(audience)}`,
      `${atShop}&scope=api_keys:read&scope=api_keys:read`,
      `${atShop}&scope=%E0%A4%A`,
    ]) {
      const response = await check(`Bearer ${token}`, query);
      expect([query, response.status, response.body.code]).toEqual([query, 400, 'INVALID_ARGUMENT']);
      expectUncacheable(response);
    }
  });

  it("accepts only a token for the gateway's own audience: not one minted without resource (Gatehouse's own), nor another resource server's", async () => {
    const forGatehouse = await t.exchange(key.value);
    const forBilling = await t.exchange(key.value, { resource: billing });
    for (const other of [forGatehouse, forBilling]) {
      const response = await check(`Bearer ${other}`).expect(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="gatehouse", error="invalid_token"');
      expectUncacheable(response);
    }
    await check(`Bearer ${forBilling}`, `?audience=${encodeURIComponent(billing)}`).expect(200);
    // Gatehouse's own token is Gatehouse's API's, which takes it; a gateway cannot name that audience.
    await t.http().get('/v1/user-api-keys').set('Authorization', `Bearer ${forGatehouse}`).expect(200);
    await check(`Bearer ${forGatehouse}`, '?audience=gatehouse').expect(401);
    // A revoked key's token for another audience is 401, whatever the gateway names.
    const revoked = await t.createKey(member, 'revoked elsewhere');
    const revokedToken = await t.exchange(revoked.value, { resource: billing });
    await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set('Authorization', `Bearer ${member.token}`).expect(200);
    await check(`Bearer ${revokedToken}`, '?audience=https://nowhere.example.com').expect(401);
  });

  it('answers a token for another audience alike whether the named audience is registered or not: no way to list resource servers', async () => {
    const forGatehouse = await t.exchange(key.value);
    const forBilling = await t.exchange(key.value, { resource: billing });
    /** Everything a caller sees but the Date and the request's own id. */
    const seen = async (authorization: string, query: string) => {
      const response = await check(authorization, query);
      const headers: Record<string, string> = { ...response.headers };
      delete headers.date;
      delete headers['x-request-id'];
      return { status: response.status, text: response.text, headers };
    };
    const registered = [billing, 'https://shop.example.com'];
    const unregistered = ['https://nowhere.example.com', 'https://shop.example.com/', 'gatehouse', 'x'];
    for (const [authorization, audiences] of [
      // The shop's token, at every audience but the shop's; Gatehouse's own and billing's, at every one.
      [`Bearer ${token}`, [billing]],
      [`Bearer ${forGatehouse}`, registered],
      [`Bearer ${forBilling}`, ['https://shop.example.com']],
    ] as const) {
      const expected = await seen(authorization, `?audience=${encodeURIComponent(audiences[0])}`);
      expect(expected.status).toBe(401);
      expect(expected.headers['www-authenticate']).toBe('Bearer realm="gatehouse", error="invalid_token"');
      expect(JSON.parse(expected.text)).toEqual({
        code: 'UNAUTHENTICATED',
        message: 'user not authenticated',
        reason: 'token_wrong_audience',
      });
      for (const other of [...audiences, ...unregistered]) {
        for (const scope of ['', '&scope=api_keys:read']) {
          const query = `?audience=${encodeURIComponent(other)}${scope}`;
          expect([query, await seen(authorization, query)]).toEqual([query, expected]);
        }
      }
    }
  });

  describe('nothing the client sends changes what the gateway asked', () => {
    /** Envoy's path_prefix ends in `ignored=`, to which it appends the client's path and query. */
    const envoy = (clientPath: string, prefix = `${atShop}&scope=api_keys:read`) => `${prefix}&ignored=${clientPath}`;

    it('nothing from the first `ignored` parameter on is read: not an audience, not a scope, not a repeat', async () => {
      const forBilling = await t.exchange(key.value, { resource: billing });
      const b = encodeURIComponent(billing);
      for (const clientPath of [`/orders?audience=${b}&scope=`, `/orders&audience=${b}`, `/x&ignored=&audience=${b}`]) {
        await check(`Bearer ${token}`, envoy(clientPath)).expect(200);
        await check(`Bearer ${forBilling}`, envoy(clientPath)).expect(401);
      }
      // The gateway's scope stands: the client can neither drop nor add to it.
      await check(`Bearer ${token}`, envoy('/orders&scope=api_keys:manage')).expect(200);
      await check(`Bearer ${token}`, envoy('/orders&scope=', `${atShop}&scope=api_keys:manage`)).expect(403);
      // Without the gateway's audience before `ignored`, none is read after it.
      await check(
        `Bearer ${token}`,
        envoy(`/orders&audience=${encodeURIComponent(audience)}`, '?scope=api_keys:read'),
      ).expect(400);
    });

    it('the original URI in forwarded headers is not read', async () => {
      const forBilling = await t.exchange(key.value, { resource: billing });
      const elsewhere = `/orders?audience=${encodeURIComponent(billing)}&scope=`;
      for (const name of [
        'X-Forwarded-Uri',
        'X-Original-URI',
        'X-Original-URL',
        'X-Envoy-Original-Path',
        'X-Rewrite-URL',
      ]) {
        await check(`Bearer ${forBilling}`).set(name, elsewhere).expect(401);
        await check(`Bearer ${token}`, `${atShop}&scope=api_keys:read`)
          .set(name, '/x?scope=api_keys:manage')
          .expect(200);
      }
    });
  });

  it("the shutdown's 503 is not kept either", async () => {
    const draining = await createTestApp({ database: t.database });
    try {
      draining.get(ShutdownState).begin();
      const response = await draining.http().get(`/v1/forward-auth${atShop}`).set('Authorization', `Bearer ${token}`);
      expect(response.status).toBe(503);
      expectUncacheable(response);
    } finally {
      await draining.close();
    }
  });

  it("names the token's own organization: another organization's member gets its id, for the gateway to compare", async () => {
    const stranger = await t.user({ org: 'forward-other', role: 'admin' });
    const strangerToken = await t.exchange((await t.createKey(stranger, 'stranger')).value, { resource: audience });
    const response = await check(`Bearer ${strangerToken}`).expect(200);
    expect(response.headers['x-gatehouse-organization-id']).toBe(stranger.organizationId);
    expect(response.headers['x-gatehouse-organization-id']).not.toBe(member.organizationId);
  });

  it('refuses a revoked key at the next request', async () => {
    const revoked = await t.createKey(member, 'revoked');
    const revokedToken = await t.exchange(revoked.value, { resource: audience });
    await check(`Bearer ${revokedToken}`).expect(200);
    await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set('Authorization', `Bearer ${member.token}`).expect(200);
    await check(`Bearer ${revokedToken}`).expect(401);
  });

  it("never lets an allowed answer be cached past its key's expiry (a rotation's grace end)", async () => {
    const gateway = await createTestApp({ database: t.database, env: { FORWARD_AUTH_CACHE_SECONDS: '5' } });
    try {
      const admin = await t.user({ org: 'forward', role: 'admin' });
      const now = nextWholeSecond();
      freezeDate(now);
      const graced = await t.createKey(admin, 'graced');
      const gracedToken = await t.exchange(graced.value, { resource: audience });
      const forever = await t.exchange((await t.createKey(admin, 'forever')).value, { resource: audience });
      await t
        .http()
        .post(`/v1/user-api-keys/${graced.id}/rotate`)
        .set('Authorization', `Bearer ${admin.token}`)
        .send({ grace_period_seconds: 3 })
        .expect(201);
      const answer = async (value = gracedToken) => {
        const response = await gateway.http().get(`/v1/forward-auth${atShop}`).set('Authorization', `Bearer ${value}`);
        return [response.status, response.headers['cache-control'], response.headers['x-accel-expires']];
      };
      expect(await answer(forever)).toEqual([200, 'private, max-age=5', '5']);
      expect(await answer()).toEqual([200, 'private, max-age=3', '3']);
      jest.setSystemTime(now + 1_500);
      expect(await answer()).toEqual([200, 'private, max-age=1', '1']);
      jest.setSystemTime(now + 2_999);
      expect(await answer()).toEqual([200, 'no-store', '0']);
      jest.setSystemTime(now + 3_000);
      expect(await answer()).toEqual([401, 'no-store', undefined]);
    } finally {
      jest.useRealTimers();
      await gateway.close();
    }
  });

  it('FORWARD_AUTH_CACHE_SECONDS=0: an allowed answer is not to be cached at all', async () => {
    const uncached = await createTestApp({ database: t.database, env: { FORWARD_AUTH_CACHE_SECONDS: '0' } });
    try {
      const response = await uncached
        .http()
        .get(`/v1/forward-auth${atShop}`)
        .set('Authorization', `Bearer ${token}`)
        .expect(200);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.headers['x-accel-expires']).toBe('0');
    } finally {
      await uncached.close();
    }
  });
});
