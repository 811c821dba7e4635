import { createRemoteJWKSet, decodeProtectedHeader, jwtVerify } from 'jose';
import * as oauth from 'oauth4webapi';
import * as client from 'openid-client';
import { PERMISSIONS } from '../../src/identity/roles';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { freePort } from '../support/ports';
import { createTestApp, TestApp, TestUser } from '../support/test-app';

/**
 * Independent OAuth and JOSE libraries against a listening Gatehouse (docs/resource-servers.md): oauth4webapi discovers
 * the RFC 8414 metadata and validates access tokens under RFC 9068; openid-client's client-credentials grant obtains a
 * token with an API key (Basic and client_secret_post); jose verifies with `typ: at+jwt`.
 */
describe('OAuth interop (oauth4webapi, openid-client, jose)', () => {
  let t: TestApp;
  let issuer: string;
  let user: TestUser;
  let key: { id: string; value: string };
  const audience = 'https://orders.example.com';

  beforeAll(async () => {
    const port = await freePort();
    issuer = `http://127.0.0.1:${port}`;
    t = await createTestApp({ env: { JWT_ISSUER: issuer, PUBLIC_BASE_URL: issuer } });
    await t.app.listen(port, '127.0.0.1');
    user = await t.user({ org: 'interop', role: 'admin' });
    key = await t.createKey(user, 'interop');
    await t.get(ResourceServersService).register('Orders', audience);
  });

  afterAll(() => t.close());

  it('serves the RFC 8414 metadata, cacheable for 5 minutes', async () => {
    const response = await fetch(`${issuer}/.well-known/oauth-authorization-server`);
    expect(response.status).toBe(200);
    expect(response.headers.get('cache-control')).toBe('public, max-age=300');
    expect(await response.json()).toEqual({
      issuer,
      jwks_uri: `${issuer}/.well-known/jwks.json`,
      token_endpoint: `${issuer}/oauth/token`,
      token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post', 'none'],
      grant_types_supported: [
        'client_credentials',
        'urn:ietf:params:oauth:grant-type:token-exchange',
        'authorization_code',
        'refresh_token',
      ],
      introspection_endpoint: `${issuer}/oauth/introspect`,
      introspection_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
      scopes_supported: [...PERMISSIONS],
      response_types_supported: ['code'],
      authorization_endpoint: `${issuer}/oauth/authorize`,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
    });
  });

  describe('oauth4webapi', () => {
    async function discover(): Promise<oauth.AuthorizationServer> {
      const url = new URL(issuer);
      const response = await oauth.discoveryRequest(url, { algorithm: 'oauth2', [oauth.allowInsecureRequests]: true });
      return oauth.processDiscoveryResponse(url, response);
    }

    it('discovers the metadata and validates an access token of POST /v1/token under RFC 9068', async () => {
      const as = await discover();
      expect(as.issuer).toBe(issuer);
      const token = await t.exchange(key.value);
      const request = new Request('https://api.example.com/orders', { headers: { authorization: `Bearer ${token}` } });
      const claims = await oauth.validateJwtAccessToken(as, request, 'gatehouse', {
        [oauth.allowInsecureRequests]: true,
      });
      expect(claims).toMatchObject({ iss: issuer, aud: 'gatehouse', sub: user.userId, client_id: key.id });
    });

    it("validates a token minted for a resource server's audience there, and refuses it for another audience", async () => {
      const as = await discover();
      const token = await t.exchange(key.value, { resource: audience });
      const request = new Request(`${audience}/orders`, { headers: { authorization: `Bearer ${token}` } });
      const options = { [oauth.allowInsecureRequests]: true };
      await expect(oauth.validateJwtAccessToken(as, request, audience, options)).resolves.toMatchObject({
        aud: audience,
      });
      await expect(oauth.validateJwtAccessToken(as, request, 'gatehouse', options)).rejects.toThrow(/aud/);
    });

    it('obtains a token with the client-credentials grant (client_secret_basic) that works on the API', async () => {
      const as = await discover();
      const response = await oauth.clientCredentialsGrantRequest(
        as,
        { client_id: key.id },
        oauth.ClientSecretBasic(key.value),
        new URLSearchParams({ scope: 'api_keys:read' }),
        { [oauth.allowInsecureRequests]: true },
      );
      const result = await oauth.processClientCredentialsResponse(as, { client_id: key.id }, response);
      expect(result).toMatchObject({ token_type: 'bearer', scope: 'api_keys:read', expires_in: expect.any(Number) });
      await t
        .http()
        .get(`/v1/user-api-keys/${key.id}`)
        .set('Authorization', `Bearer ${result.access_token}`)
        .expect(200);
    });
  });

  describe('openid-client', () => {
    it.each([
      ['client_secret_basic', (secret: string) => client.ClientSecretBasic(secret)],
      ['client_secret_post', (secret: string) => client.ClientSecretPost(secret)],
    ])('obtains a token with an API key (%s) that works on the API', async (_method, authentication) => {
      const config = await client.discovery(new URL(issuer), key.id, undefined, authentication(key.value), {
        algorithm: 'oauth2',
        execute: [client.allowInsecureRequests],
      });
      const tokens = await client.clientCredentialsGrant(config);
      expect(tokens.token_type).toBe('bearer');
      const response = await t
        .http()
        .get('/v1/user-api-keys')
        .set('Authorization', `Bearer ${tokens.access_token}`)
        .expect(200);
      expect(response.body.api_keys.map((k: { id: string }) => k.id)).toContain(key.id);
    });

    it('narrows the token to a resource (RFC 8707) and a scope', async () => {
      const config = await client.discovery(new URL(issuer), key.id, undefined, client.ClientSecretBasic(key.value), {
        algorithm: 'oauth2',
        execute: [client.allowInsecureRequests],
      });
      const tokens = await client.clientCredentialsGrant(config, { scope: 'api_keys:read', resource: audience });
      expect(tokens.scope).toBe('api_keys:read');
      const { payload } = await jwtVerify(
        tokens.access_token,
        createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`)),
        {
          issuer,
          audience,
          typ: 'at+jwt',
        },
      );
      expect(payload).toMatchObject({ client_id: key.id, scope: 'api_keys:read' });
      // A token for a resource server is not Gatehouse's own API's.
      await t.http().get('/v1/user-api-keys').set('Authorization', `Bearer ${tokens.access_token}`).expect(401);
    });
  });

  describe('jose', () => {
    it("verifies an access token against the JWKS with typ 'at+jwt', and refuses a session token as one", async () => {
      const jwks = createRemoteJWKSet(new URL(`${issuer}/.well-known/jwks.json`));
      const token = await t.exchange(key.value);
      expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'ES256', typ: 'at+jwt' });
      const { payload } = await jwtVerify(token, jwks, { issuer, audience: 'gatehouse', typ: 'at+jwt' });
      expect(payload).toMatchObject({ sub: user.userId, client_id: key.id });
      expect(payload).not.toHaveProperty('akid');
      await expect(jwtVerify(user.token, jwks, { issuer, audience: 'gatehouse', typ: 'at+jwt' })).rejects.toThrow(
        /typ/,
      );
    });
  });
});
