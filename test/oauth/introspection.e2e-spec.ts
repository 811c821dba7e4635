import { decodeJwt } from 'jose';
import { DataSource } from 'typeorm';
import { TokenService } from '../../src/auth/token.service';
import { MembersService } from '../../src/members/members.service';
import { IdentityService } from '../../src/identity/identity.service';
import { ResourceServer } from '../../src/resource-servers/resource-server.entity';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { signEs256, otherEcKey } from '../support/http-assertions';
import { createTestApp, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/**
 * POST /oauth/introspect (docs/resource-servers.md#introspection): RFC 7662 for registered resource servers, the
 * token's live state read on every call, on every instance.
 */
const FORM = 'application/x-www-form-urlencoded';
const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

describe('POST /oauth/introspect', () => {
  let a: TestApp;
  let b: TestApp;
  let admin: TestUser;
  let member: TestUser;
  let orders: { clientId: string; clientSecret: string };
  let billing: { clientId: string; clientSecret: string };
  const ordersAudience = 'https://orders.example.com';
  const billingAudience = 'http://127.0.0.1:8081/billing';

  beforeAll(async () => {
    a = await createTestApp();
    // A second instance on the same database: what one revokes, the other refuses at once.
    b = await createTestApp({ database: a.database });
    admin = await a.user({ org: 'introspect', role: 'admin' });
    member = await a.user({ org: 'introspect', role: 'member' });
    orders = await a.get(ResourceServersService).register('Orders', ordersAudience);
    billing = await b.get(ResourceServersService).register('Billing', billingAudience);
  }, SET_UP_TIMEOUT_MS);

  afterAll(async () => {
    await b.close();
    await a.close();
  });

  function introspect(t: TestApp, token: string, server = orders, via: 'basic' | 'post' = 'basic') {
    const request = t.http().post('/oauth/introspect').type(FORM);
    if (via === 'basic') {
      return request
        .set('Authorization', basic(server.clientId, server.clientSecret))
        .send(new URLSearchParams({ token }).toString());
    }
    const form = { token, client_id: server.clientId, client_secret: server.clientSecret };
    return request.send(new URLSearchParams(form).toString());
  }

  async function expectInactive(t: TestApp, token: string, server = orders): Promise<void> {
    const response = await introspect(t, token, server).expect(200);
    expect(response.body).toStrictEqual({ active: false });
    expect(response.headers['cache-control']).toBe('no-store');
  }

  it('answers a live access token with its claims and the scope it has now (Basic and client_secret_post)', async () => {
    const key = await a.createKey(member, 'live');
    const token = await a.exchange(key.value, { resource: ordersAudience });
    for (const via of ['basic', 'post'] as const) {
      const response = await introspect(a, token, orders, via).expect(200);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toStrictEqual({
        active: true,
        scope: 'api_keys:read integrations:read',
        client_id: key.id,
        sub: member.userId,
        org: member.organizationId,
        aud: ordersAudience,
        iss: TEST_ISSUER,
        exp: expect.any(Number),
        iat: expect.any(Number),
        jti: expect.any(String),
        token_type: 'Bearer',
      });
    }
    // A role change narrows what the token may do at once, at the other instance too.
    const demoted = await a.user({ org: 'introspect', role: 'admin' });
    const wide = await a.createKey(demoted, 'wide', { scopes: ['api_keys:read', 'api_keys:create'] });
    const wideToken = await a.exchange(wide.value, { resource: ordersAudience });
    expect((await introspect(b, wideToken).expect(200)).body.scope).toBe('api_keys:create api_keys:read');
    await a.get(IdentityService).setRole(demoted.organizationId, demoted.userId, 'viewer');
    expect((await introspect(b, wideToken).expect(200)).body.scope).toBe('api_keys:read');
  });

  it("is active only for the caller's own audience: not for a token minted without resource (Gatehouse's own), nor another resource server's", async () => {
    const key = await a.createKey(admin, 'audiences');
    const forOrders = await a.exchange(key.value, { resource: ordersAudience });
    const forBilling = await a.exchange(key.value, { resource: billingAudience });
    const forGatehouse = await a.exchange(key.value);
    expect((await introspect(a, forOrders).expect(200)).body).toMatchObject({ active: true, aud: ordersAudience });
    expect((await introspect(a, forBilling, billing).expect(200)).body).toMatchObject({ active: true });
    await expectInactive(a, forBilling);
    await expectInactive(a, forOrders, billing);
    // A resource server that received Gatehouse's own token learns nothing of it, by either authentication method...
    await expectInactive(a, forGatehouse);
    await expectInactive(b, forGatehouse, billing);
    expect((await introspect(a, forGatehouse, orders, 'post').expect(200)).body).toStrictEqual({ active: false });
    // ...and its own token does not work at Gatehouse's API: replayed there, it plants no key (401).
    const replay = await a
      .http()
      .post('/v1/user-api-keys')
      .set('Authorization', `Bearer ${forOrders}`)
      .send({ label: 'planted' });
    expect([replay.status, replay.headers['www-authenticate']]).toEqual([401, 'Bearer realm="gatehouse"']);
    // Gatehouse's own token keeps working there.
    await a.http().get('/v1/user-api-keys').set('Authorization', `Bearer ${forGatehouse}`).expect(200);
  });

  it("answers exp as the earlier of the token's own and its key's expiry (a rotation's grace end)", async () => {
    const key = await a.createKey(admin, 'exp');
    const token = await a.exchange(key.value, { resource: ordersAudience });
    const ownExp = decodeJwt(token).exp!;
    expect((await introspect(a, token).expect(200)).body.exp).toBe(ownExp);
    const rotation = await a
      .http()
      .post(`/v1/user-api-keys/${key.id}/rotate`)
      .set('Authorization', `Bearer ${admin.token}`)
      .send({ grace_period_seconds: 600 })
      .expect(201);
    const graceEnd = Math.floor(Date.parse(rotation.body.previous_api_key.expires_at) / 1000);
    expect(graceEnd).toBeLessThan(ownExp);
    expect((await introspect(b, token).expect(200)).body).toMatchObject({ active: true, exp: graceEnd });
    // A key with an expiry: a token cut to it, and a shorter one that keeps its own.
    const expiresAt = Date.now() + 120_500;
    const expiring = await a.createKey(admin, 'expiring', { expires_at: new Date(expiresAt).toISOString() });
    const cut = await a.exchange(expiring.value, { resource: ordersAudience });
    expect((await introspect(a, cut).expect(200)).body.exp).toBe(Math.floor(expiresAt / 1000));
    const short = await a.exchange(expiring.value, { resource: ordersAudience, expires_in: 60 });
    expect((await introspect(a, short).expect(200)).body.exp).toBe(decodeJwt(short).exp);
  });

  it('is { active: false } alone for anything that is not a live access token of ours', async () => {
    const key = await a.createKey(admin, 'inactive');
    const token = await a.exchange(key.value, { resource: ordersAudience });
    const tokens = a.get(TokenService);
    const expired = await tokens.mint({
      userId: admin.userId,
      organizationId: admin.organizationId,
      credentialId: key.id,
      lifetimeSeconds: 60,
      scope: 'api_keys:read',
      tokenUse: 'access',
      audience: ordersAudience,
      issuedAtMs: Date.now() - 3_600_000,
    });
    // Each is inactive for its own reason: the token they are made from is active.
    expect((await introspect(a, token).expect(200)).body.active).toBe(true);
    const [, payload] = token.split('.');
    const forged = signEs256(JSON.parse(Buffer.from(payload, 'base64url').toString()), otherEcKey(), 'some-kid');
    for (const value of ['', 'garbage', forged, expired, admin.token, `${token}x`]) await expectInactive(a, value);
  });

  it('a revoked key, a removed member: inactive on the next call, at the other instance too', async () => {
    const key = await a.createKey(admin, 'revoke me');
    const token = await a.exchange(key.value, { resource: ordersAudience });
    expect((await introspect(b, token).expect(200)).body.active).toBe(true);
    await a.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${admin.token}`).expect(200);
    await expectInactive(b, token);

    const leaving = await a.user({ org: 'introspect', role: 'member' });
    const leavingKey = await a.createKey(leaving, 'leaving');
    const leavingToken = await a.exchange(leavingKey.value, { resource: ordersAudience });
    expect((await introspect(b, leavingToken).expect(200)).body.active).toBe(true);
    await a.get(MembersService).remove(leaving.organizationId, leaving.userId);
    await expectInactive(b, leavingToken);
  });

  it('tokens of every organization are introspected the same way; an organization is no boundary for it', async () => {
    const other = await a.user({ org: 'introspect-other', role: 'admin' });
    const key = await a.createKey(other, 'other org');
    const response = await introspect(a, await a.exchange(key.value, { resource: ordersAudience })).expect(200);
    expect(response.body).toMatchObject({ active: true, org: other.organizationId, sub: other.userId });
  });

  describe('the caller', () => {
    it('must be a registered resource server: else 401 invalid_client, with the Basic challenge when Basic was used', async () => {
      const token = await a.exchange((await a.createKey(admin, 'caller')).value);
      const cases = [
        a.http().post('/oauth/introspect').type(FORM).send(`token=${token}`),
        a
          .http()
          .post('/oauth/introspect')
          .type(FORM)
          .set('Authorization', basic(orders.clientId, 'wrong'))
          .send(`token=${token}`),
        a
          .http()
          .post('/oauth/introspect')
          .type(FORM)
          .set('Authorization', basic('unknown', orders.clientSecret))
          .send(`token=${token}`),
        a
          .http()
          .post('/oauth/introspect')
          .type(FORM)
          .send(
            new URLSearchParams({ token, client_id: orders.clientId, client_secret: billing.clientSecret }).toString(),
          ),
      ];
      const responses = await Promise.all(cases);
      expect(responses.map((r) => [r.status, r.body.error, r.headers['www-authenticate']])).toEqual([
        [401, 'invalid_client', undefined],
        [401, 'invalid_client', 'Basic realm="gatehouse"'],
        [401, 'invalid_client', 'Basic realm="gatehouse"'],
        [401, 'invalid_client', undefined],
      ]);
    });

    it('a rotated secret stops at once at every instance; a removed server too', async () => {
      const servers = a.get(ResourceServersService);
      const audit = await servers.register('Audit', 'https://audit.example.com');
      const token = await a.exchange((await a.createKey(admin, 'rotation')).value, {
        resource: 'https://audit.example.com',
      });
      expect((await introspect(b, token, audit).expect(200)).body.active).toBe(true);
      const rotated = await servers.rotateSecret('https://audit.example.com');
      expect(rotated.clientId).toBe(audit.clientId);
      expect((await introspect(b, token, audit)).status).toBe(401);
      await introspect(b, token, rotated).expect(200);
      await servers.remove('https://audit.example.com');
      expect((await introspect(b, token, rotated)).status).toBe(401);
    });

    it('stores the secret only as a peppered HMAC', async () => {
      const row = await a.get(DataSource).getRepository(ResourceServer).findOneByOrFail({ id: orders.clientId });
      expect(row.secretHash).toMatch(/^[0-9a-f]{64}$/);
      expect(JSON.stringify(row)).not.toContain(orders.clientSecret);
      expect(orders.clientSecret).toMatch(/^gh_rs_[A-Za-z0-9_-]{43}$/);
    });

    it('400 invalid_request without a token, with a repeated one, or a JSON body', async () => {
      const auth = basic(orders.clientId, orders.clientSecret);
      const missing = await a
        .http()
        .post('/oauth/introspect')
        .type(FORM)
        .set('Authorization', auth)
        .send('token_type_hint=access_token');
      const twice = await a
        .http()
        .post('/oauth/introspect')
        .type(FORM)
        .set('Authorization', auth)
        .send('token=a&token=b');
      const json = await a.http().post('/oauth/introspect').set('Authorization', auth).send({ token: 'a' });
      for (const [response, reason] of [
        [missing, 'introspection_request_invalid'],
        [twice, 'form_parameter_repeated'],
        // A JSON body is not the form: refused before introspection reads it, as any malformed body is.
        [json, 'invalid_argument'],
      ] as const) {
        expect([response.status, response.body]).toEqual([
          400,
          { error: 'invalid_request', error_description: expect.any(String), reason },
        ]);
      }
    });
  });
});
