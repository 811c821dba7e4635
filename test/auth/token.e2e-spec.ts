import { randomBytes, randomUUID } from 'node:crypto';
import { testBuildDirectory } from '../support/build-directory';
import jwt from 'jsonwebtoken';
import { ApiKeyCodec } from '../../src/api-keys/api-key-codec';
import { SecretHasher } from '../../src/common/secret-hasher';
import { JwtSigner } from '../../src/auth/jwt-signer';
import { ApiKeysRepository } from '../../src/api-keys/api-keys.repository';
import { CredentialUseRecorder } from '../../src/credentials/credential-use.recorder';
import { IdentityService } from '../../src/identity/identity.service';
import {
  apiKeyAuth,
  bearer,
  decodeJwt,
  expectApiKeyRejected,
  expectError,
  expectInvalidArgument,
  ISO_MS,
  UUID,
} from '../support/http-assertions';
import { createTestApp, createTestDatabase, TEST_ISSUER, TestApp, testSecrets } from '../support/test-app';

/** POST /v1/token: docs/api.md#post-v1token, each step in its order. */
describe('POST /v1/token', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Many failed exchanges from one address on purpose: not what the failed-attempt limit is tested with.
    t = await createTestApp({ env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '100000' } });
  });
  afterAll(() => t.close());

  const exchange = (authorization?: string) => {
    const request = t.http().post('/v1/token');
    return authorization === undefined ? request : request.set('Authorization', authorization);
  };
  const codec = new ApiKeyCodec('dev');

  describe('1. without an Authorization header', () => {
    it('answers 401 "authorization header required"', async () => {
      expectApiKeyRejected(await exchange(), 'authorization header required', 'authorization_header_missing');
    });
  });

  describe('2. with another scheme', () => {
    it.each([
      ['Bearer with a valid session token', (key: string, token: string) => `Bearer ${token}`],
      ['Bearer with the API key', (key: string) => `Bearer ${key}`],
      ['Basic', (key: string) => `Basic ${Buffer.from(`${key}:`).toString('base64')}`],
      ['Token', (key: string) => `Token ${key}`],
      ['the bare key without a scheme', (key: string) => key],
      ['ApiKeys (a longer scheme name)', (key: string) => `ApiKeys ${key}`],
    ])('%s -> 401 "authorization header must use ApiKey scheme"', async (_name, header) => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      expectApiKeyRejected(
        await exchange(header(value, user.token)),
        'authorization header must use ApiKey scheme',
        'authorization_scheme_not_api_key',
      );
    });
  });

  describe('the scheme is compared case-insensitively', () => {
    it.each([['apikey'], ['APIKEY'], ['ApiKey'], ['aPiKeY']])('%s is accepted', async (scheme) => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      await exchange(`${scheme} ${value}`).expect(200);
    });
  });

  describe('3. a value that fails the format check -> 401 "api key invalid"', () => {
    const flip = (s: string, i: number): string => s.slice(0, i) + (s[i] === 'a' ? 'b' : 'a') + s.slice(i + 1);
    it.each([
      ['three segments', (v: string) => v.split('.').slice(0, 3).join('.')],
      ['five segments', (v: string) => `${v}.00000000`],
      [
        'a foreign environment',
        (v: string) => {
          const [, hex, secret] = v.split('.');
          return new ApiKeyCodec('prod').format(hex, secret);
        },
      ],
      ['a bad checksum', (v: string) => flip(v, v.length - 1)],
      ['a mistyped secret (checksum no longer matches)', (v: string) => flip(v, 40)],
      ['a truncated value', (v: string) => v.slice(0, -1)],
      ['a value cut in half', (v: string) => v.slice(0, v.length / 2)],
      ['an empty value', () => ''],
      ['an upper-cased value', (v: string) => v.toUpperCase()],
      ['a value with a trailing dot', (v: string) => `${v}.`],
    ])('%s', async (_name, mutate) => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      expectApiKeyRejected(await exchange(`ApiKey ${mutate(value)}`), 'api key invalid', 'api_key_malformed');
    });

    it('the scheme alone', async () => {
      expectApiKeyRejected(await exchange('ApiKey'), 'api key invalid', 'api_key_malformed');
    });
  });

  describe('4. well-formed but wrong credentials -> 401 "invalid api key credentials"', () => {
    it('an unknown key id', async () => {
      const forged = codec.format(randomUUID(), ApiKeyCodec.newSecret());
      expectApiKeyRejected(
        await exchange(`ApiKey ${forged}`),
        'invalid api key credentials',
        'api_key_invalid_credentials',
      );
    });

    it('the right key id with another secret', async () => {
      const user = await t.user();
      const { id } = await t.createKey(user);
      const forged = codec.format(id, ApiKeyCodec.newSecret());
      expectApiKeyRejected(
        await exchange(`ApiKey ${forged}`),
        'invalid api key credentials',
        'api_key_invalid_credentials',
      );
    });

    it("another key's secret under this key's id", async () => {
      const user = await t.user();
      const a = await t.createKey(user);
      const b = await t.createKey(user);
      const forged = codec.format(a.id, b.value.split('.')[2]);
      expectApiKeyRejected(
        await exchange(`ApiKey ${forged}`),
        'invalid api key credentials',
        'api_key_invalid_credentials',
      );
    });
  });

  describe('5. a revoked key', () => {
    it('with the right secret -> 401 "api key revoked"', async () => {
      const user = await t.user();
      const { id, value } = await t.createKey(user);
      await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      expectApiKeyRejected(await exchange(`ApiKey ${value}`), 'api key revoked', 'api_key_revoked');
    });

    it('with a wrong secret -> 401 "invalid api key credentials" (revocation is not revealed)', async () => {
      const user = await t.user();
      const { id } = await t.createKey(user);
      await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      const forged = codec.format(id, ApiKeyCodec.newSecret());
      expectApiKeyRejected(
        await exchange(`ApiKey ${forged}`),
        'invalid api key credentials',
        'api_key_invalid_credentials',
      );
    });
  });

  describe('6. the owner is no longer a member of the organization', () => {
    it('-> 401 "invalid api key credentials"', async () => {
      const user = await t.user({ org: 'token-removed' });
      const { value } = await t.createKey(user);
      await t.exchange(value);
      await t.get(IdentityService).removeMember(user.organizationId, user.userId);
      expectApiKeyRejected(
        await exchange(`ApiKey ${value}`),
        'invalid api key credentials',
        'api_key_invalid_credentials',
      );
    });

    it('a key keeps working for an owner who is still a member of another organization only in that one', async () => {
      const email = `two-orgs-${randomBytes(3).toString('hex')}@example.com`;
      const inA = await t.user({ org: 'token-org-a', email });
      const inB = await t.user({ org: 'token-org-b', email });
      const keyA = await t.createKey(inA);
      const keyB = await t.createKey(inB);
      await t.get(IdentityService).removeMember(inA.organizationId, inA.userId);
      expectApiKeyRejected(
        await exchange(`ApiKey ${keyA.value}`),
        'invalid api key credentials',
        'api_key_invalid_credentials',
      );
      await exchange(`ApiKey ${keyB.value}`).expect(200);
    });
  });

  describe('success', () => {
    it('answers 200 {access_token, token_type: Bearer, expires_in: 1800, scope} with Cache-Control: no-store', async () => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      const response = await exchange(`ApiKey ${value}`);
      expect(response.status).toBe(200);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.body).toStrictEqual({
        access_token: expect.stringMatching(/^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/),
        token_type: 'Bearer',
        expires_in: 1800,
        // An admin's key with the default scopes: all of them, in catalogue order.
        scope: 'api_keys:read audit:read integrations:read integrations:write',
      });
    });

    it('issues an ES256 JWT with a kid from the JWKS and the claims of docs/api.md', async () => {
      const user = await t.user();
      const { id, value } = await t.createKey(user);
      const before = Math.floor(Date.now() / 1000);
      const { body } = await exchange(`ApiKey ${value}`).expect(200);
      const after = Math.ceil(Date.now() / 1000);
      const { header, payload } = decodeJwt(body.access_token);

      const jwks = await t.http().get('/.well-known/jwks.json').expect(200);
      // RFC 9068: an access token is typed at+jwt (session tokens are plain JWTs).
      expect(header).toStrictEqual({ alg: 'ES256', typ: 'at+jwt', kid: expect.any(String) });
      expect(jwks.body.keys.map((k: { kid: string }) => k.kid)).toContain(header.kid);

      expect(payload).toStrictEqual({
        iss: TEST_ISSUER,
        aud: 'gatehouse',
        sub: user.userId,
        org: user.organizationId,
        jti: expect.stringMatching(UUID),
        iat: expect.any(Number),
        exp: expect.any(Number),
        token_use: 'access',
        client_id: id,
        scope: body.scope,
      });
      const iat = payload.iat as number;
      expect(iat).toBeGreaterThanOrEqual(before);
      expect(iat).toBeLessThanOrEqual(after);
      expect((payload.exp as number) - iat).toBe(body.expires_in);
    });

    it('keeps accepting a token minted before `akid` was dropped until it expires, and its key is still checked', async () => {
      const user = await t.user();
      const { id, value } = await t.createKey(user);
      const { header, payload } = decodeJwt(await t.exchange(value));
      // What this version minted before: the key id twice, as `akid` and `client_id`.
      const legacy = jwt.sign({ ...payload, akid: id }, testSecrets.JWT_PRIVATE_KEY, {
        algorithm: 'ES256',
        keyid: header.kid as string,
        header: { alg: 'ES256', typ: 'at+jwt' },
      });
      await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(legacy)).expect(200);
      await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      await t.http().get('/v1/user-api-keys').set(bearer(legacy)).expect(401);
    });

    it('gives every exchange its own jti', async () => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      const a = decodeJwt(await t.exchange(value)).payload.jti;
      const b = decodeJwt(await t.exchange(value)).payload.jti;
      expect(a).not.toBe(b);
    });

    it("uses the organization's access-token lifetime, read at exchange time", async () => {
      const user = await t.user({ org: 'token-lifetime' });
      const { value } = await t.createKey(user);
      const identity = t.get(IdentityService);
      for (const seconds of [60, 86400, 3600]) {
        await identity.setAccessTokenLifetime(user.organizationId, seconds);
        const { body } = await exchange(`ApiKey ${value}`).expect(200);
        expect(body.expires_in).toBe(seconds);
        const { payload } = decodeJwt(body.access_token);
        expect((payload.exp as number) - (payload.iat as number)).toBe(seconds);
      }
    });

    it('works with the minted token on a Bearer route', async () => {
      const user = await t.user();
      const { id, value } = await t.createKey(user);
      const token = await t.exchange(value);
      const got = await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(token)).expect(200);
      expect(got.body.api_key.id).toBe(id);
    });

    it('50 concurrent exchanges of one key all succeed with distinct jti', async () => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      const responses = await Promise.all(
        Array.from({ length: 50 }, () => t.http().post('/v1/token').set(apiKeyAuth(value))),
      );
      expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
      const jtis = responses.map((r) => decodeJwt(r.body.access_token).payload.jti);
      expect(new Set(jtis).size).toBe(50);
      await Promise.all(
        responses.map((r) => t.http().get('/v1/user-api-keys').set(bearer(r.body.access_token)).expect(200)),
      );
    });
  });

  describe('request body', () => {
    it('may be absent', async () => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      await exchange(`ApiKey ${value}`).expect(200);
    });

    it('may be {}', async () => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      await exchange(`ApiKey ${value}`).send({}).expect(200);
    });

    it.each([
      ['{"a":1}', '{"a":1}'],
      ['[]', '[]'],
      ['malformed JSON', '{"a":'],
      ['null', 'null'],
    ])('refuses %s with 400', async (_name, raw) => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      const response = await exchange(`ApiKey ${value}`).set('Content-Type', 'application/json').send(raw);
      expectInvalidArgument(response);
    });

    it('refuses a body that is not JSON with 400', async () => {
      const user = await t.user();
      const { value } = await t.createKey(user);
      expectInvalidArgument(await exchange(`ApiKey ${value}`).set('Content-Type', 'text/plain').send('hello'));
    });

    it.each([
      ['malformed JSON', 'application/json', '{"a":'],
      ['a body that is not JSON', 'text/plain', 'hello'],
    ])('answers %s after the header: 401 for a missing header or wrong credentials', async (_name, type, raw) => {
      const user = await t.user();
      const { id } = await t.createKey(user);
      const send = (authorization?: string) => exchange(authorization).set('Content-Type', type).send(raw);
      expectError(
        await send(),
        401,
        'UNAUTHENTICATED',
        'authorization header required',
        'authorization_header_missing',
      );
      expectError(
        await send('Bearer x'),
        401,
        'UNAUTHENTICATED',
        'authorization header must use ApiKey scheme',
        'authorization_scheme_not_api_key',
      );
      expectError(await send('ApiKey dev.x'), 401, 'UNAUTHENTICATED', 'api key invalid', 'api_key_malformed');
      const wrong = codec.format(id, ApiKeyCodec.newSecret());
      expectError(
        await send(`ApiKey ${wrong}`),
        401,
        'UNAUTHENTICATED',
        'invalid api key credentials',
        'api_key_invalid_credentials',
      );
    });

    it('answers a body larger than BODY_LIMIT_BYTES 413 at once, before the header', async () => {
      const response = await exchange()
        .set('Content-Type', 'application/json')
        .send(`{"scope":"${'x'.repeat(20_000)}"}`);
      expectError(response, 413, 'INVALID_ARGUMENT', 'request body too large', 'body_too_large');
    });

    it('does not record a use when the request is refused', async () => {
      const user = await t.user();
      const { id, value } = await t.createKey(user);
      await exchange(`ApiKey ${value}`).send({ a: 1 }).expect(400);
      const got = await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      expect(got.body.api_key.last_used_at).toBeNull();
    });
  });

  describe('last_used_at', () => {
    it('is null before the first exchange and set by it', async () => {
      const user = await t.user();
      const { id, value, body: created } = await t.createKey(user);
      const get = () => t.http().get(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      expect((await get()).body.api_key.last_used_at).toBeNull();

      await t.exchange(value);
      const used = (await get()).body.api_key;
      expect(used.last_used_at).toMatch(ISO_MS);
      expect(used.last_used_at >= created.api_key.created_at).toBe(true);

      const listed = await t.http().get('/v1/user-api-keys').set(bearer(user.token)).expect(200);
      expect(listed.body.api_keys[0].last_used_at).toBe(used.last_used_at);
    });

    it('is not set by failed exchanges', async () => {
      const user = await t.user();
      const { id } = await t.createKey(user);
      await exchange(`ApiKey ${codec.format(id, ApiKeyCodec.newSecret())}`).expect(401);
      const got = await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
      expect(got.body.api_key.last_used_at).toBeNull();
    });
  });
});

describe('POST /v1/token when signing fails', () => {
  let t: TestApp;
  let failSigning = false;

  beforeAll(async () => {
    // A real signer whose signing can be made to fail (an unavailable signing key).
    const signer = new JwtSigner(testBuildDirectory());
    const sign = signer.sign.bind(signer);
    signer.sign = (...args: Parameters<JwtSigner['sign']>) => {
      if (failSigning) throw new Error('signing key unavailable');
      return sign(...args);
    };
    t = await createTestApp({ override: (builder) => builder.overrideProvider(JwtSigner).useValue(signer) });
  });
  afterAll(() => t.close());

  it('answers 500 INTERNAL "failed to mint access token", records no use, and recovers', async () => {
    const user = await t.user();
    const { id, value } = await t.createKey(user);
    failSigning = true;
    try {
      const response = await t.http().post('/v1/token').set(apiKeyAuth(value));
      expectError(response, 500, 'INTERNAL', 'failed to mint access token', 'mint_failed');
      expect(response.text).not.toContain('signing key unavailable');
    } finally {
      failSigning = false;
    }
    const got = await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(user.token)).expect(200);
    expect(got.body.api_key.last_used_at).toBeNull();
    await t.exchange(value);
  });
});

describe('last_used_at across instances', () => {
  /** last_used_at of a key as GET /v1/user-api-keys/{id} on `app` shows it. */
  const lastUsedAt = async (app: TestApp, token: string, id: string) =>
    (await app.http().get(`/v1/user-api-keys/${id}`).set(bearer(token)).expect(200)).body.api_key.last_used_at as
      string | null;

  it('one flush writes every pending key, and never moves a stored time backwards', async () => {
    const database = createTestDatabase();
    const writer = await createTestApp({ database });
    const reader = await createTestApp({ database });
    try {
      const user = await writer.user();
      const used = [await writer.createKey(user), await writer.createKey(user), await writer.createKey(user)];
      const unused = await writer.createKey(user);
      const lastUsed = (app: TestApp, id: string) => lastUsedAt(app, user.token, id);

      for (const key of used) await writer.exchange(key.value);
      const recorder = writer.get(CredentialUseRecorder);
      await recorder.flush();
      for (const key of used) {
        const stored = await lastUsed(reader, key.id);
        expect(stored).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
        expect(stored).toBe(await lastUsed(writer, key.id));
      }
      expect(await lastUsed(reader, unused.id)).toBeNull();

      // An older use that reaches the database after a newer one (two instances) does not win.
      const newer = (await lastUsed(reader, used[0].id))!;
      const store = writer.get(ApiKeysRepository);
      recorder.record(used[0].id, { at: new Date(Date.parse(newer) - 60_000), ip: null, userAgent: null, store });
      recorder.record(used[1].id, { at: new Date(Date.parse(newer) + 60_000), ip: null, userAgent: null, store });
      await recorder.flush();
      expect(await lastUsed(reader, used[0].id)).toBe(newer);
      expect(await lastUsed(reader, used[1].id)).toBe(new Date(Date.parse(newer) + 60_000).toISOString());
    } finally {
      await writer.close();
      await reader.close();
      await database.drop();
    }
  });

  it('is written to the database: by the periodic flush, and at shutdown', async () => {
    const database = createTestDatabase();
    const first = await createTestApp({ database });
    const second = await createTestApp({ database });
    let firstOpen = true;
    try {
      const user = await first.user();
      const flushed = await first.createKey(user);
      const atShutdown = await first.createKey(user);
      const lastUsed = (app: TestApp, id: string) => lastUsedAt(app, user.token, id);

      await first.exchange(flushed.value);
      expect(await lastUsed(first, flushed.id)).toMatch(ISO_MS);
      await first.get(CredentialUseRecorder).flush();
      expect(await lastUsed(second, flushed.id)).toBe(await lastUsed(first, flushed.id));

      await first.exchange(atShutdown.value);
      const seenByFirst = await lastUsed(first, atShutdown.id);
      firstOpen = false;
      await first.close();
      expect(await lastUsed(second, atShutdown.id)).toBe(seenByFirst);
    } finally {
      if (firstOpen) await first.close();
      await second.close();
      await database.drop();
    }
  });
});

/**
 * Step 4 takes the same time whether the key id exists or not (docs/api.md#post-v1token): an unknown id's secret is
 * compared against a stand-in hash, the HMAC a wrong secret costs. The timings are measured by
 * bench/timings/token-step-4.bench.ts (`npm run bench:timings`).
 */
describe('POST /v1/token: an unknown key id costs what a wrong secret costs', () => {
  let t: TestApp;
  const codec = new ApiKeyCodec('dev');
  beforeAll(async () => {
    t = await createTestApp({ env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '100000' } });
  });
  afterAll(() => t.close());
  afterEach(() => jest.restoreAllMocks());

  it('compares the presented secret in constant time for an unknown key id too', async () => {
    const matches = jest.spyOn(SecretHasher.prototype, 'matches');
    const secret = ApiKeyCodec.newSecret();
    const response = await t
      .http()
      .post('/v1/token')
      .set(apiKeyAuth(codec.format(randomUUID(), secret)));
    expectApiKeyRejected(response, 'invalid api key credentials', 'api_key_invalid_credentials');
    expect(matches).toHaveBeenCalledTimes(1);
    expect(matches).toHaveBeenCalledWith(secret, expect.stringMatching(/^[0-9a-f]{64}$/));
    expect(matches.mock.results[0]).toEqual({ type: 'return', value: false });
  });
});
