import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { createTestApp, TestApp, TestUser } from '../support/test-app';

/**
 * /v1/forward-auth (docs/resource-servers.md#forward-auth): any method, headers in, 200 with who the request is or the
 * RFC 6750 challenge, live state as introspection. The real nginx in front of it: nginx.e2e-spec.ts.
 */
describe('/v1/forward-auth', () => {
  let t: TestApp;
  let member: TestUser;
  let key: { id: string; value: string };
  let token: string;
  const audience = 'https://shop.example.com';

  beforeAll(async () => {
    t = await createTestApp();
    member = await t.user({ org: 'forward', role: 'member' });
    key = await t.createKey(member, 'gateway');
    token = await t.exchange(key.value);
    await t.get(ResourceServersService).register('Shop', audience);
  });

  afterAll(() => t.close());

  const check = (authorization?: string, query = '', method: 'get' | 'post' | 'delete' | 'patch' = 'get') => {
    const request = t.http()[method](`/v1/forward-auth${query}`);
    return authorization === undefined ? request : request.set('Authorization', authorization);
  };

  it('allows a live access token for any method: empty body, who it is, cacheable for FORWARD_AUTH_CACHE_SECONDS', async () => {
    for (const method of ['get', 'post', 'delete', 'patch'] as const) {
      const response = await check(`Bearer ${token}`, '', method).expect(200);
      expect(response.text).toBe('');
      expect(response.headers).toMatchObject({
        'x-gatehouse-user-id': member.userId,
        'x-gatehouse-organization-id': member.organizationId,
        'x-gatehouse-api-key-id': key.id,
        'x-gatehouse-scope': 'api_keys:read integrations:read',
        'cache-control': 'private, max-age=1',
        'x-accel-expires': '1',
      });
    }
    // A body of any type is not read (a gateway may pass the client's along).
    await t
      .http()
      .post('/v1/forward-auth')
      .set('Authorization', `Bearer ${token}`)
      .type('text/plain')
      .send('x')
      .expect(200);
  });

  it('401 with the RFC 6750 challenge: no error without credentials, invalid_token otherwise', async () => {
    const none = await check().expect(401);
    expect(none.headers['www-authenticate']).toBe('Bearer realm="gatehouse"');
    expect(none.body).toEqual({ code: 'UNAUTHENTICATED', message: 'user not authenticated' });
    for (const header of [`Bearer ${token}x`, 'Bearer', `Basic ${token}`, `Bearer ${member.token}`]) {
      const response = await check(header).expect(401);
      expect(response.headers['www-authenticate']).toBe('Bearer realm="gatehouse", error="invalid_token"');
      expect(response.headers['cache-control']).toBe('no-store');
    }
  });

  it('403 insufficient_scope naming what is required (space- or comma-separated)', async () => {
    await check(`Bearer ${token}`, '?scope=api_keys:read,integrations:read').expect(200);
    const response = await check(`Bearer ${token}`, '?scope=api_keys:read%20api_keys:create').expect(403);
    expect(response.headers['www-authenticate']).toBe(
      'Bearer realm="gatehouse", error="insufficient_scope", scope="api_keys:read api_keys:create"',
    );
    expect(response.body).toEqual({ code: 'PERMISSION_DENIED', message: 'insufficient permissions' });
  });

  it('400 for a gateway misconfigured: an unknown permission, an unregistered audience, a repeated parameter', async () => {
    for (const query of ['?scope=everything', '?audience=https://nowhere.example.com', '?scope=a&scope=b']) {
      const response = await check(`Bearer ${token}`, query).expect(400);
      expect(response.body.code).toBe('INVALID_ARGUMENT');
    }
  });

  it("checks the audience: a resource server's token only there; the default audience's everywhere", async () => {
    const forShop = await t.exchange(key.value, { resource: audience });
    const query = `?audience=${encodeURIComponent(audience)}`;
    await check(`Bearer ${forShop}`, query).expect(200);
    await check(`Bearer ${token}`, query).expect(200);
    const elsewhere = await check(`Bearer ${forShop}`).expect(401);
    expect(elsewhere.headers['www-authenticate']).toContain('invalid_token');
  });

  it("names the token's own organization: another organization's member gets its id, for the gateway to compare", async () => {
    const stranger = await t.user({ org: 'forward-other', role: 'admin' });
    const strangerToken = await t.exchange((await t.createKey(stranger, 'stranger')).value);
    const response = await check(`Bearer ${strangerToken}`).expect(200);
    expect(response.headers['x-gatehouse-organization-id']).toBe(stranger.organizationId);
    expect(response.headers['x-gatehouse-organization-id']).not.toBe(member.organizationId);
  });

  it('refuses a revoked key at the next request', async () => {
    const revoked = await t.createKey(member, 'revoked');
    const revokedToken = await t.exchange(revoked.value);
    await check(`Bearer ${revokedToken}`).expect(200);
    await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set('Authorization', `Bearer ${member.token}`).expect(200);
    await check(`Bearer ${revokedToken}`).expect(401);
  });

  it('FORWARD_AUTH_CACHE_SECONDS=0: an allowed answer is not to be cached at all', async () => {
    const uncached = await createTestApp({ database: t.database, env: { FORWARD_AUTH_CACHE_SECONDS: '0' } });
    try {
      const response = await uncached
        .http()
        .get('/v1/forward-auth')
        .set('Authorization', `Bearer ${token}`)
        .expect(200);
      expect(response.headers['cache-control']).toBe('no-store');
    } finally {
      await uncached.close();
    }
  });
});
