import { DataSource } from 'typeorm';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import { AuditEvent } from '../../src/audit/audit-event.entity';
import { IdentityService } from '../../src/identity/identity.service';
import { Metrics } from '../../src/metrics/metrics';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { decodeJwt, expectError } from '../support/http-assertions';
import { createTestApp, TestApp, TestUser } from '../support/test-app';

/**
 * POST /oauth/token (docs/resource-servers.md#client-credentials): RFC 6749 section 4.4 with the API key as the client,
 * the same exchange as POST /v1/token (rules, failure limit, audit records, metrics), errors in RFC 6749's shape.
 */
const FORM = 'application/x-www-form-urlencoded';
const basic = (id: string, secret: string): string =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

describe('POST /oauth/token (client credentials)', () => {
  let t: TestApp;
  let user: TestUser;
  let key: { id: string; value: string };
  const audience = 'https://billing.example.com';

  beforeAll(async () => {
    t = await createTestApp({ env: { TRUST_PROXY: 'loopback', TOKEN_FAILURE_LIMIT_PER_MINUTE: '3' } });
    user = await t.user({ org: 'oauth-cc', role: 'member' });
    key = await t.createKey(user, 'cc');
    await t.get(ResourceServersService).register('Billing', audience);
  });

  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  let address = 0;
  /** A client address of its own per test, so that the failure limit is never shared between tests. */
  function token(form: Record<string, string> | string, authorization?: string, ip = `10.9.0.${++address}`) {
    const request = t.http().post('/oauth/token').set('X-Forwarded-For', ip).type(FORM);
    if (authorization !== undefined) request.set('Authorization', authorization);
    return request.send(typeof form === 'string' ? form : new URLSearchParams(form).toString());
  }

  function expectOAuthError(
    response: { status: number; body: unknown; headers: Record<string, string> },
    status: number,
    error: string,
  ) {
    expect({ status: response.status, error: (response.body as { error?: string }).error }).toEqual({ status, error });
    expect(Object.keys(response.body as object).sort()).toEqual(['error', 'error_description', 'reason']);
    expect(response.headers['cache-control']).toBe('no-store');
  }

  describe('success', () => {
    it('issues the same access token as POST /v1/token with HTTP Basic, no-store', async () => {
      const metrics = jest.spyOn(t.get(Metrics), 'tokenExchange');
      const response = await token({ grant_type: 'client_credentials' }, basic(key.id, key.value)).expect(200);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.headers.pragma).toBe('no-cache');
      expect(response.body).toEqual({
        access_token: expect.any(String),
        token_type: 'Bearer',
        expires_in: 1800,
        scope: 'api_keys:read integrations:read',
      });
      expect(decodeJwt(response.body.access_token).payload).toMatchObject({
        aud: 'gatehouse',
        sub: user.userId,
        client_id: key.id,
        token_use: 'access',
      });
      expect(decodeJwt(response.body.access_token).payload).not.toHaveProperty('akid');
      expect(metrics.mock.calls).toEqual([['success']]);
      await t
        .http()
        .get(`/v1/user-api-keys/${key.id}`)
        .set('Authorization', `Bearer ${response.body.access_token}`)
        .expect(200);
    });

    it('takes client_secret_post, the id dashed or as in the key, and every part form-encoded in Basic', async () => {
      await token({ grant_type: 'client_credentials', client_id: key.id, client_secret: key.value }).expect(200);
      await token({
        grant_type: 'client_credentials',
        client_id: key.id.replace(/-/g, ''),
        client_secret: key.value,
      }).expect(200);
      const encodeAll = (text: string) =>
        [...text].map((c) => `%${c.charCodeAt(0).toString(16).padStart(2, '0')}`).join('');
      const header = `Basic ${Buffer.from(`${encodeAll(key.id)}:${encodeAll(key.value)}`).toString('base64')}`;
      await token({ grant_type: 'client_credentials' }, header).expect(200);
      // Basic with the same client_id in the body as well is one method.
      await token({ grant_type: 'client_credentials', client_id: key.id }, basic(key.id, key.value)).expect(200);
    });

    it('narrows by scope and resource (RFC 8707): the token is for that audience only', async () => {
      const response = await token(
        { grant_type: 'client_credentials', scope: 'api_keys:read', resource: audience },
        basic(key.id, key.value),
      ).expect(200);
      expect(response.body.scope).toBe('api_keys:read');
      expect(decodeJwt(response.body.access_token).payload).toMatchObject({ aud: audience, scope: 'api_keys:read' });
      await t.http().get('/v1/user-api-keys').set('Authorization', `Bearer ${response.body.access_token}`).expect(401);
    });
  });

  describe('errors in the RFC 6749 shape', () => {
    it.each([
      ['no grant_type', { client_id: 'x' }, 'invalid_request'],
      ['another grant', { grant_type: 'password' }, 'unsupported_grant_type'],
    ])('%s: 400 %s, before the client is looked at', async (_case, form, error) => {
      expectOAuthError(await token(form, basic(key.id, key.value)), 400, error);
    });

    it('refuses a repeated parameter, a JSON body and two authentication methods (400 invalid_request)', async () => {
      expectOAuthError(
        await token('grant_type=client_credentials&grant_type=client_credentials'),
        400,
        'invalid_request',
      );
      const json = await t.http().post('/oauth/token').send({ grant_type: 'client_credentials' });
      expectOAuthError(json, 400, 'invalid_request');
      const both = await token(
        { grant_type: 'client_credentials', client_id: key.id, client_secret: key.value },
        basic(key.id, key.value),
      );
      expectOAuthError(both, 400, 'invalid_request');
      const otherId = await token(
        { grant_type: 'client_credentials', client_id: 'someone-else' },
        basic(key.id, key.value),
      );
      expectOAuthError(otherId, 400, 'invalid_request');
    });

    it('a charset other than UTF-8, or a __proto__ parameter, is refused or ignored as any other', async () => {
      const latin = await t
        .http()
        .post('/oauth/token')
        .set('Content-Type', 'application/x-www-form-urlencoded; charset=iso-8859-1')
        .send('grant_type=client_credentials');
      expectOAuthError(latin, 400, 'invalid_request');
      const proto = await token('grant_type=client_credentials&__proto__=x&__proto__=y', basic(key.id, key.value));
      expectOAuthError(proto, 400, 'invalid_request');
      await token('grant_type=client_credentials&__proto__=x', basic(key.id, key.value)).expect(200);
    });

    it('a body over BODY_LIMIT_BYTES is 413 invalid_request', async () => {
      const response = await token(`grant_type=client_credentials&scope=${'a'.repeat(20_000)}`);
      expectOAuthError(response, 413, 'invalid_request');
    });

    it('no client authentication: 401 invalid_client without a Basic challenge', async () => {
      const response = await token({ grant_type: 'client_credentials' });
      expectOAuthError(response, 401, 'invalid_client');
      expect(response.headers['www-authenticate']).toBeUndefined();
    });

    it('a wrong key: 401 invalid_client with the Basic challenge, audited and counted as POST /v1/token is', async () => {
      const metrics = jest.spyOn(t.get(Metrics), 'tokenExchange');
      const wrong = `${key.value.slice(0, -9)}.00000000`;
      const otherUser = await t.user({ org: 'oauth-cc' });
      const other = await t.createKey(otherUser, 'other');
      const wrongSecret = new ApiKeyCodec(t.config.apiKeys.environment).format(key.id, ApiKeyCodec.newSecret());
      const responses = [
        await token({ grant_type: 'client_credentials' }, basic(key.id, wrong)),
        await token({ grant_type: 'client_credentials' }, basic(key.id, other.value)),
        await token({ grant_type: 'client_credentials', client_id: key.id, client_secret: 'not-a-key' }),
        await token({ grant_type: 'client_credentials' }, 'Bearer abc'),
      ];
      for (const response of responses) expectOAuthError(response, 401, 'invalid_client');
      expect(responses.map((r) => r.headers['www-authenticate'])).toEqual([
        'Basic realm="gatehouse"',
        'Basic realm="gatehouse"',
        undefined,
        'Basic realm="gatehouse"',
      ]);
      expect(responses[0].body.error_description).toBe('api key invalid');
      expect(responses[1].body.error_description).toBe('invalid api key credentials');
      expect(metrics.mock.calls).toEqual([['malformed_key'], ['invalid_credentials'], ['malformed_key']]);
      // A wrong secret under a real key id: recorded as POST /v1/token records it (the id is not a secret).
      expect(wrongSecret).not.toBe(key.value);
      const failed = await token({ grant_type: 'client_credentials' }, basic(key.id, wrongSecret));
      expectOAuthError(failed, 401, 'invalid_client');
      const audit = await t
        .get(DataSource)
        .getRepository(AuditEvent)
        .findBy({ action: 'token.exchange_failed', targetId: key.id });
      expect(audit.map((event) => event.reason)).toContain('invalid_credentials');
    });

    it("another organization's key under this key's client_id: 401 invalid_client", async () => {
      const stranger = await t.user({ org: 'oauth-cc-other', role: 'admin' });
      const foreign = await t.createKey(stranger, 'foreign');
      const response = await token({
        grant_type: 'client_credentials',
        client_id: key.id,
        client_secret: foreign.value,
      });
      expectOAuthError(response, 401, 'invalid_client');
      const crossed = await token({ grant_type: 'client_credentials' }, basic(foreign.id, key.value));
      expectOAuthError(crossed, 401, 'invalid_client');
    });

    it('a revoked key: 401 invalid_client "api key revoked", audited with its owner', async () => {
      const revoked = await t.createKey(user, 'revoked');
      await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set('Authorization', `Bearer ${user.token}`).expect(200);
      const response = await token({ grant_type: 'client_credentials' }, basic(revoked.id, revoked.value));
      expectOAuthError(response, 401, 'invalid_client');
      expect(response.body.error_description).toBe('api key revoked');
      const [event] = await t
        .get(DataSource)
        .getRepository(AuditEvent)
        .findBy({ action: 'token.exchange_failed', targetId: revoked.id });
      expect(event).toMatchObject({ reason: 'revoked', actorUserId: user.userId, organizationId: user.organizationId });
    });

    it('a scope beyond the key or malformed: 400 invalid_scope; an unknown resource: 400 invalid_target', async () => {
      const auth = basic(key.id, key.value);
      expectOAuthError(
        await token({ grant_type: 'client_credentials', scope: 'api_keys:manage' }, auth),
        400,
        'invalid_scope',
      );
      expectOAuthError(
        await token({ grant_type: 'client_credentials', scope: 'everything' }, auth),
        400,
        'invalid_scope',
      );
      const target = await token({ grant_type: 'client_credentials', resource: 'https://unknown.example.com' }, auth);
      expectOAuthError(target, 400, 'invalid_target');
      expect(target.body.error_description).toBe('unknown resource');
    });

    it('past the failure limit: 429 temporarily_unavailable with Retry-After, shared with POST /v1/token', async () => {
      const ip = '10.9.1.1';
      for (let i = 0; i < 3; i += 1) {
        expectOAuthError(
          await token({ grant_type: 'client_credentials' }, basic(key.id, 'x'), ip),
          401,
          'invalid_client',
        );
      }
      const limited = await token({ grant_type: 'client_credentials' }, basic(key.id, key.value), ip);
      expectOAuthError(limited, 429, 'temporarily_unavailable');
      expect(Number(limited.headers['retry-after'])).toBeGreaterThanOrEqual(1);
      const v1 = await t
        .http()
        .post('/v1/token')
        .set('X-Forwarded-For', ip)
        .set('Authorization', `ApiKey ${key.value}`);
      expectError(v1, 429, 'RESOURCE_EXHAUSTED', 'too many requests', 'too_many_failed_exchanges');
    });
  });

  describe('POST /v1/token with resource', () => {
    it('mints for a registered audience, and refuses an unknown one with 400 "unknown resource"', async () => {
      const token = await t.exchange(key.value, { resource: audience });
      expect(decodeJwt(token).payload.aud).toBe(audience);
      const unknown = await t
        .http()
        .post('/v1/token')
        .set('Authorization', `ApiKey ${key.value}`)
        .send({ resource: 'https://unknown.example.com' });
      expectError(unknown, 400, 'INVALID_ARGUMENT', 'unknown resource', 'unknown_resource');
    });

    it("carries what the owner's role allows at mint (a resource server cannot read the role); Gatehouse's own token keeps the key's scopes", async () => {
      const demoted = await t.user({ org: 'oauth-cc-demoted', role: 'member' });
      const wide = await t.createKey(demoted, 'wide', { scopes: ['api_keys:create', 'api_keys:read'] });
      await t.get(IdentityService).setRole(demoted.organizationId, demoted.userId, 'viewer');

      const forResource = await t
        .http()
        .post('/v1/token')
        .set('Authorization', `ApiKey ${wide.value}`)
        .send({ resource: audience });
      expect(forResource.status).toBe(200);
      expect(forResource.body.scope).toBe('api_keys:read');
      expect(decodeJwt(forResource.body.access_token).payload.scope).toBe('api_keys:read');
      const granted = await token({ grant_type: 'client_credentials', resource: audience }, basic(wide.id, wide.value));
      expect(granted.status).toBe(200);
      expect(granted.body.scope).toBe('api_keys:read');
      expect(decodeJwt(granted.body.access_token).payload.scope).toBe('api_keys:read');

      // Gatehouse reads the role at every request: its own token says what the key allows (docs/api.md#scopes).
      const own = await t.http().post('/v1/token').set('Authorization', `ApiKey ${wide.value}`).expect(200);
      expect(own.body.scope).toBe('api_keys:create api_keys:read');
    });
  });
});
