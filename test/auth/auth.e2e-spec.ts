import { CredentialsService } from '../../src/credentials/credentials.service';
import { createPublicKey, JsonWebKey } from 'node:crypto';
import jwt from 'jsonwebtoken';
import { IdentityService } from '../../src/identity/identity.service';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import {
  bearer,
  expectBearerRejected,
  expectError,
  handMadeJwt,
  otherEcKey,
  sessionClaims,
  signEs256,
} from '../support/http-assertions';
import { createTestApp, TEST_ISSUER, TestApp, testSecrets, TestUser } from '../support/test-app';

/** Bearer authentication, roles and the app-wide error rendering (docs/api.md). */
describe('Bearer authentication', () => {
  let t: TestApp;
  let kid: string;
  beforeAll(async () => {
    t = await createTestApp();
    kid = (await t.http().get('/.well-known/jwks.json').expect(200)).body.keys[0].kid;
  });
  afterAll(() => t.close());

  const listWith = (headers: Record<string, string> = {}) => t.http().get('/v1/user-api-keys').set(headers);

  describe('rejects with 401 "user not authenticated" and WWW-Authenticate: Bearer', () => {
    it('no Authorization header', async () => {
      expectBearerRejected(await listWith());
    });

    it.each([
      ['Basic', (token: string) => `Basic ${Buffer.from(`u:${token}`).toString('base64')}`],
      ['ApiKey', (token: string) => `ApiKey ${token}`],
      ['Token', (token: string) => `Token ${token}`],
      ['no scheme', (token: string) => token],
      ['Bearer without a token', () => 'Bearer'],
      ['Bearer and a space', () => 'Bearer '],
    ])('another scheme: %s', async (_name, header) => {
      const user = await t.user();
      expectBearerRejected(await listWith({ Authorization: header(user.token) }), 'token_malformed');
    });

    it('an API key presented as a Bearer token', async () => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      expectBearerRejected(await listWith(bearer(value)), 'token_invalid');
    });

    it.each([['garbage'], ['a.b.c'], ['eyJhbGciOiJFUzI1NiJ9.e30.'], ['x'.repeat(2000)]])(
      'a garbage token %#',
      async (token) => {
        expectBearerRejected(await listWith(bearer(token)), 'token_invalid');
      },
    );

    describe('forged tokens', () => {
      let user: TestUser;
      beforeAll(async () => {
        user = await t.user({ org: 'forgery' });
      });

      it('(control) a token made here with the service key and claims is accepted', async () => {
        await listWith(bearer(signEs256(sessionClaims(user), testSecrets.JWT_PRIVATE_KEY, kid))).expect(200);
      });

      it('signed by another key under our kid', async () => {
        expectBearerRejected(
          await listWith(bearer(signEs256(sessionClaims(user), otherEcKey(), kid))),
          'token_invalid',
        );
      });

      it('signed by another key under an unknown kid', async () => {
        expectBearerRejected(
          await listWith(bearer(signEs256(sessionClaims(user), otherEcKey(), 'unknown-kid'))),
          'token_invalid',
        );
      });

      it('without a kid', async () => {
        const token = jwt.sign(sessionClaims(user), testSecrets.JWT_PRIVATE_KEY, { algorithm: 'ES256' });
        expectBearerRejected(await listWith(bearer(token)), 'token_invalid');
      });

      it('expired', async () => {
        const claims = sessionClaims(user);
        const now = Math.floor(Date.now() / 1000);
        const token = signEs256({ ...claims, iat: now - 7200, exp: now - 3600 }, testSecrets.JWT_PRIVATE_KEY, kid);
        expectBearerRejected(await listWith(bearer(token)), 'access_token_expired');
      });

      it('from another issuer', async () => {
        const token = signEs256({ ...sessionClaims(user), iss: 'elsewhere' }, testSecrets.JWT_PRIVATE_KEY, kid);
        expectBearerRejected(await listWith(bearer(token)), 'token_invalid');
      });

      it('for another audience', async () => {
        const token = signEs256({ ...sessionClaims(user), aud: 'elsewhere' }, testSecrets.JWT_PRIVATE_KEY, kid);
        expectBearerRejected(await listWith(bearer(token)), 'token_wrong_audience');
      });

      it('alg: none', async () => {
        const token = handMadeJwt({ alg: 'none', typ: 'JWT', kid }, sessionClaims(user));
        expectBearerRejected(await listWith(bearer(token)), 'token_invalid');
      });

      it('alg: HS256 keyed with the public key (algorithm confusion)', async () => {
        const publicPem = createPublicKey(testSecrets.JWT_PRIVATE_KEY)
          .export({ type: 'spki', format: 'pem' })
          .toString();
        const token = handMadeJwt({ alg: 'HS256', typ: 'JWT', kid }, sessionClaims(user), publicPem);
        expectBearerRejected(await listWith(bearer(token)), 'token_invalid');
      });

      it("a tampered payload (another user's id) under the original signature", async () => {
        const victim = await t.user({ org: 'forgery' });
        const [header, , signature] = user.token.split('.');
        const claims = JSON.parse(Buffer.from(user.token.split('.')[1], 'base64url').toString());
        const payload = Buffer.from(JSON.stringify({ ...claims, sub: victim.userId })).toString('base64url');
        expectBearerRejected(await listWith(bearer(`${header}.${payload}.${signature}`)), 'token_invalid');
      });

      it.each([
        ['without org', { org: undefined }],
        ['without sub', { sub: undefined }],
        ['with a token_use other than access or session', { token_use: 'refresh' }],
        ['an access token without client_id', { token_use: 'access' }],
        ['a sub that is not a user id', { sub: 'admin' }],
      ])('well signed but %s', async (_name, change) => {
        const token = signEs256({ ...sessionClaims(user), ...change }, testSecrets.JWT_PRIVATE_KEY, kid);
        expectBearerRejected(await listWith(bearer(token)), 'token_invalid');
      });

      it('well signed for a user that does not exist', async () => {
        const claims = { ...sessionClaims(user), sub: '00000000-0000-4000-8000-000000000000' };
        expectBearerRejected(
          await listWith(bearer(signEs256(claims, testSecrets.JWT_PRIVATE_KEY, kid))),
          'member_removed',
        );
      });
    });

    it('a valid token in the query string (?access_token=)', async () => {
      const user = await t.user();
      expectBearerRejected(await t.http().get(`/v1/user-api-keys?access_token=${user.token}`));
    });

    it('a valid token in the body', async () => {
      const user = await t.user();
      const response = await t.http().post('/v1/user-api-keys').send({ access_token: user.token });
      expectBearerRejected(response);
      const listed = await listWith(bearer(user.token)).expect(200);
      expect(listed.body.total_count).toBe(0);
    });

    it.each([
      ['GET', '/v1/user-api-keys/00000000-0000-4000-8000-000000000000'],
      ['DELETE', '/v1/user-api-keys/00000000-0000-4000-8000-000000000000'],
      ['POST', '/v1/user-api-keys'],
    ])('on %s %s too', async (method, path) => {
      const response = await t.http()[method === 'GET' ? 'get' : method === 'POST' ? 'post' : 'delete'](path);
      expectBearerRejected(response);
    });
  });

  describe('access tokens', () => {
    it('work on Bearer routes and stop working the moment their key is revoked', async () => {
      const user = await t.user();
      const { id, value } = await t.createKey(user, 'revoker', { scopes: ['api_keys:read', 'api_keys:revoke'] });
      const other = await t.createKey(user);
      const accessToken = await t.exchange(value);
      const otherToken = await t.exchange(other.value);

      await listWith(bearer(accessToken)).expect(200);
      await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(accessToken)).expect(200);

      expectBearerRejected(await listWith(bearer(accessToken)), 'credential_revoked');
      await listWith(bearer(otherToken)).expect(200);
      await listWith(bearer(user.token)).expect(200);
    });

    it("a token minted for a resource server is refused by Gatehouse's own API (401): a server that received it cannot replay it here", async () => {
      const user = await t.user();
      const audience = 'https://replay.example.com';
      await t.get(ResourceServersService).register('Replay', audience);
      const { value } = await t.createKey(user, 'replayed', { scopes: ['api_keys:read', 'api_keys:create'] });
      const forServer = await t.exchange(value, { resource: audience });
      expectBearerRejected(
        await t.http().post('/v1/user-api-keys').set(bearer(forServer)).send({ label: 'planted' }),
        'token_wrong_audience',
      );
      expectBearerRejected(await listWith(bearer(forServer)), 'token_wrong_audience');
      // Minted without `resource`, the token is Gatehouse's own API's, and works there.
      const own = await t.exchange(value);
      await t.http().post('/v1/user-api-keys').set(bearer(own)).send({ label: 'own' }).expect(201);
    });

    it('can create keys when the key was given api_keys:create (management permissions only when asked for)', async () => {
      const user = await t.user({ role: 'member' });
      const plain = await t.createKey(user);
      expectError(
        await t
          .http()
          .post('/v1/user-api-keys')
          .set(bearer(await t.exchange(plain.value)))
          .send({}),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      const { value } = await t.createKey(user, 'creator', { scopes: ['api_keys:create'] });
      const accessToken = await t.exchange(value);
      const created = await t.http().post('/v1/user-api-keys').set(bearer(accessToken)).send({ label: 'via access' });
      expect(created.status).toBe(201);
      expect(created.body.api_key.user_id).toBe(user.userId);
    });
  });

  describe('roles (docs/api.md, "Roles and permissions")', () => {
    it('a viewer may list, get and revoke its own keys but not create one (403 "insufficient permissions")', async () => {
      const user = await t.user({ org: 'roles', role: 'admin' });
      const { id } = await t.createKey(user);
      await t.get(IdentityService).setRole(user.organizationId, user.userId, 'viewer');

      await listWith(bearer(user.token)).expect(200);
      await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      expectError(
        await t.http().post('/v1/user-api-keys').set(bearer(user.token)).send({}),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      const revoked = await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      expect(revoked.body.api_key.status).toBe('REVOKED');
    });

    it('a role change takes effect at once: viewer 403, then member 201', async () => {
      const user = await t.user({ org: 'roles', role: 'viewer' });
      expectError(
        await t.http().post('/v1/user-api-keys').set(bearer(user.token)).send({}),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      await t.get(IdentityService).setRole(user.organizationId, user.userId, 'member');
      await t.http().post('/v1/user-api-keys').set(bearer(user.token)).send({}).expect(201);
      await t.get(IdentityService).setRole(user.organizationId, user.userId, 'viewer');
      await t.http().post('/v1/user-api-keys').set(bearer(user.token)).send({}).expect(403);
    });

    it('the role applies to access tokens as well, as it is when the request is served', async () => {
      const user = await t.user({ org: 'roles', role: 'member' });
      const { value } = await t.createKey(user);
      const accessToken = await t.exchange(value);
      await t.get(IdentityService).setRole(user.organizationId, user.userId, 'viewer');
      await t.http().post('/v1/user-api-keys').set(bearer(accessToken)).send({}).expect(403);
      await listWith(bearer(accessToken)).expect(200);
    });

    it('a removed member gets 401 with session and access tokens', async () => {
      const user = await t.user({ org: 'roles' });
      const { value } = await t.createKey(user);
      const accessToken = await t.exchange(value);
      await t.get(IdentityService).removeMember(user.organizationId, user.userId);
      expectBearerRejected(await listWith(bearer(user.token)), 'member_removed');
      expectBearerRejected(await listWith(bearer(accessToken)), 'member_removed');
    });

    it('a 403 is decided after authentication: a bad token on a forbidden route is still 401', async () => {
      const user = await t.user({ org: 'roles', role: 'viewer' });
      expectBearerRejected(
        await t
          .http()
          .post('/v1/user-api-keys')
          .set(bearer(`${user.token}x`))
          .send({}),
        'token_invalid',
      );
    });
  });

  describe('GET /.well-known/jwks.json', () => {
    it('is public and lists the public signing key only', async () => {
      const response = await t.http().get('/.well-known/jwks.json');
      expect(response.status).toBe(200);
      expect(response.body).toStrictEqual({
        keys: [
          {
            kty: 'EC',
            crv: 'P-256',
            x: expect.any(String),
            y: expect.any(String),
            kid: expect.any(String),
            alg: 'ES256',
            use: 'sig',
          },
        ],
      });
      const expected = createPublicKey(testSecrets.JWT_PRIVATE_KEY).export({ format: 'jwk' });
      expect(response.body.keys[0]).toMatchObject({ x: expected.x, y: expected.y });
    });

    it('verifies minted access and session tokens for another service', async () => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      const accessToken = await t.exchange(value);
      const { keys } = (await t.http().get('/.well-known/jwks.json').expect(200)).body as {
        keys: Array<JsonWebKey & { kid: string }>;
      };
      for (const token of [accessToken, user.token]) {
        const { header } = jwt.decode(token, { complete: true })!;
        const jwk = keys.find((k) => k.kid === header.kid)!;
        const publicKey = createPublicKey({ key: jwk, format: 'jwk' });
        const claims = jwt.verify(token, publicKey, {
          algorithms: ['ES256'],
          issuer: TEST_ISSUER,
          audience: 'gatehouse',
        });
        expect(claims).toMatchObject({ sub: user.userId, org: user.organizationId });
      }
      expect(() =>
        jwt.verify(accessToken, createPublicKey({ key: keys[0], format: 'jwk' }), {
          algorithms: ['ES256'],
          audience: 'someone-else',
        }),
      ).toThrow();
    });
  });

  describe('errors outside the handlers', () => {
    it.each([
      ['GET', '/nope'],
      ['GET', '/v1/user-api-keys/00000000-0000-4000-8000-000000000000/extra'],
      ['GET', '/v1/token'],
      ['PUT', '/v1/user-api-keys'],
      ['POST', '/v2/token'],
    ])('an unknown route %s %s -> 404 "route not found", with or without a token', async (method, path) => {
      const user = await t.user();
      const agent = t.http();
      const call = () => (method === 'GET' ? agent.get(path) : method === 'PUT' ? agent.put(path) : agent.post(path));
      expectError(await call(), 404, 'NOT_FOUND', 'route not found', 'route_not_found');
      expectError(await call().set(bearer(user.token)), 404, 'NOT_FOUND', 'route not found', 'route_not_found');
    });

    it('a body over BODY_LIMIT_BYTES (16384 by default) -> 413 "request body too large"; at the limit it is read', async () => {
      const user = await t.user();
      const envelope = '{"label":""}'.length;
      const atLimit = JSON.stringify({ label: 'x'.repeat(16384 - envelope) });
      const overLimit = JSON.stringify({ label: 'x'.repeat(16385 - envelope) });
      expect(Buffer.byteLength(atLimit)).toBe(16384);

      const post = (raw: string) =>
        t.http().post('/v1/user-api-keys').set(bearer(user.token)).set('Content-Type', 'application/json').send(raw);
      // At the limit the body is parsed, and the label is too long for the DTO.
      expectError(await post(atLimit), 400, 'INVALID_ARGUMENT', 'invalid request parameters', 'invalid_argument');
      expectError(await post(overLimit), 413, 'INVALID_ARGUMENT', 'request body too large', 'body_too_large');
      expectError(
        await t.http().post('/v1/token').set('Content-Type', 'application/json').send(overLimit),
        413,
        'INVALID_ARGUMENT',
        'request body too large',
        'body_too_large',
      );
    });

    it('an unexpected exception -> 500 {code: INTERNAL} without a stack or the error text', async () => {
      const user = await t.user();
      const spy = jest
        .spyOn(t.get(CredentialsService), 'list')
        .mockRejectedValueOnce(new TypeError('Cannot read properties of undefined (reading "secret_hash")'));
      try {
        const response = await listWith(bearer(user.token));
        expectError(response, 500, 'INTERNAL', 'internal error', 'internal');
        expect(response.text).not.toMatch(/secret_hash|TypeError|\bat /);
      } finally {
        spy.mockRestore();
      }
      await listWith(bearer(user.token)).expect(200);
    });

    it('errors are JSON, never HTML', async () => {
      const response = await t.http().get('/%E0%A4%A');
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(response.text).not.toMatch(/<html|<pre/i);
      expect(Object.keys(response.body).sort()).toEqual(['code', 'message', 'reason']);
    });
  });
});
