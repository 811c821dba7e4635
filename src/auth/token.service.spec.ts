import { ALL_PERMISSIONS } from '../identity/roles';
import { createHash, createHmac, createPublicKey, generateKeyPairSync, KeyObject, randomUUID } from 'node:crypto';
import { testBuildDirectory } from '../../test/support/build-directory';
import { JwtService } from '@nestjs/jwt';
import jwt from 'jsonwebtoken';
import { loadConfiguration } from '../config/configuration';
import { JwtSigner } from './jwt-signer';
import { SigningKeys } from './signing-keys';
import { MintRequest, TokenService } from './token.service';

function ecKey(): KeyObject {
  return generateKeyPairSync('ec', { namedCurve: 'P-256' }).privateKey;
}

const pem = (key: KeyObject): string => key.export({ type: 'pkcs8', format: 'pem' }).toString();
const publicPem = (key: KeyObject): string => createPublicKey(key).export({ type: 'spki', format: 'pem' }).toString();

function service(
  options: { key?: KeyObject; previous?: KeyObject[]; env?: Record<string, string> } = {},
): TokenService {
  const key = options.key ?? ecKey();
  const config = loadConfiguration({
    DATA_DIR: '/nonexistent',
    JWT_PREVIOUS_PUBLIC_KEYS: JSON.stringify((options.previous ?? []).map(publicPem)),
    ...options.env,
  });
  return new TokenService(new JwtService({}), new JwtSigner(testBuildDirectory()), config, {
    apiKeyPepper: 'p'.repeat(32),
    jwtPrivateKeyPem: pem(key),
    integrationsEncryptionKey: 'k'.repeat(44),
  });
}

const b64 = (value: unknown): string => Buffer.from(JSON.stringify(value)).toString('base64url');
type Json = Record<string, unknown>;
/**
 * The token with one signature character changed. The second-to-last one: all six of its bits are
 * signature bits, while the low bits of the last character are padding, so changing that one can
 * leave the signature as it was.
 */
const tamperSignature = (token: string): string =>
  `${token.slice(0, -2)}${token.at(-2) === 'A' ? 'B' : 'A'}${token.slice(-1)}`;

const parts = (token: string): { header: Json; payload: Json & { exp: number }; signature: string } => {
  const [header, payload, signature] = token.split('.');
  return {
    header: JSON.parse(Buffer.from(header, 'base64url').toString()),
    payload: JSON.parse(Buffer.from(payload, 'base64url').toString()),
    signature,
  };
};

describe('TokenService', () => {
  const key = ecKey();
  const tokens = service({ key });
  const session: MintRequest = {
    userId: randomUUID(),
    organizationId: randomUUID(),
    lifetimeSeconds: 600,
    tokenUse: 'session',
  };
  const access: MintRequest = {
    ...session,
    tokenUse: 'access',
    credentialId: randomUUID(),
    lifetimeSeconds: 1800,
    scope: 'api_keys:read integrations:read',
  };

  afterEach(() => jest.restoreAllMocks());

  describe('mint and verify', () => {
    it('round-trips an access token with every claim of docs/api.md', async () => {
      const token = await tokens.mint(access);
      const claims = tokens.verify(token);
      expect(claims).toStrictEqual({
        iss: 'http://localhost:3000',
        aud: 'gatehouse',
        sub: access.userId,
        org: access.organizationId,
        jti: expect.stringMatching(/^[0-9a-f-]{36}$/),
        iat: expect.any(Number),
        exp: expect.any(Number),
        token_use: 'access',
        client_id: access.credentialId,
        scope: 'api_keys:read integrations:read',
      });
      // The key id once: `akid` only repeated `client_id` (docs/api.md#access-and-session-tokens).
      expect(parts(token).payload).not.toHaveProperty('akid');
      expect(claims!.exp - claims!.iat).toBe(1800);
      expect(parts(token).header).toStrictEqual({ alg: 'ES256', typ: 'at+jwt', kid: tokens.keys.signingKid });
      expect(tokens.forOwnApi(token)?.permissions).toBe(2 | 32);
    });

    it('types session tokens JWT, and remembers every permission for them (their role decides)', async () => {
      const token = await tokens.mint(session);
      expect(parts(token).header).toStrictEqual({ alg: 'ES256', typ: 'JWT', kid: tokens.keys.signingKid });
      expect(tokens.forOwnApi(token)?.permissions).toBe(ALL_PERMISSIONS);
    });

    it('gives an access token without a scope claim (minted before scopes) every permission: its key decides', async () => {
      const { scope: _none, ...unscoped } = access;
      expect(tokens.forOwnApi(await tokens.mint(unscoped))?.permissions).toBe(ALL_PERMISSIONS);
      // Names this version does not know grant nothing; an empty scope grants nothing.
      expect(
        tokens.forOwnApi(await tokens.mint({ ...access, scope: 'integrations:read future:perm' }))?.permissions,
      ).toBe(32);
      expect(tokens.forOwnApi(await tokens.mint({ ...access, scope: '' }))?.permissions).toBe(0);
    });

    it('round-trips a session token, which has no key id', async () => {
      const claims = tokens.verify(await tokens.mint(session));
      expect(claims).toMatchObject({ sub: session.userId, org: session.organizationId, token_use: 'session' });
      expect(claims).not.toHaveProperty('client_id');
      expect(claims).not.toHaveProperty('akid');
      expect(claims!.exp - claims!.iat).toBe(600);
    });

    it('still accepts an access token minted before `akid` was dropped (both claims), read as `client_id`', async () => {
      const { payload } = parts(await tokens.mint(access));
      const legacy = jwt.sign({ ...payload, akid: access.credentialId }, key, {
        algorithm: 'ES256',
        keyid: tokens.keys.signingKid,
        header: { alg: 'ES256', typ: 'at+jwt' },
      });
      expect(tokens.forOwnApi(legacy)?.claims).toMatchObject({ client_id: access.credentialId, token_use: 'access' });
      // And one older still, with `akid` alone.
      const { client_id: _none, ...older } = payload;
      const oldest = jwt.sign({ ...older, akid: access.credentialId }, key, {
        algorithm: 'ES256',
        keyid: tokens.keys.signingKid,
      });
      expect(tokens.forOwnApi(oldest)?.claims.client_id).toBe(access.credentialId);
    });

    it('signs ES256 with the kid in the header, and a new jti every time', async () => {
      const a = parts(await tokens.mint(session));
      const b = parts(await tokens.mint(session));
      expect(a.header).toStrictEqual({ alg: 'ES256', typ: 'JWT', kid: tokens.keys.signingKid });
      expect(a.payload.jti).not.toBe(b.payload.jti);
    });

    it('uses the configured issuer and audience', async () => {
      const custom = service({ key, env: { JWT_ISSUER: 'https://auth.example', JWT_AUDIENCE: 'api.example' } });
      expect(parts(await custom.mint(session)).payload).toMatchObject({
        iss: 'https://auth.example',
        aud: 'api.example',
      });
      expect(custom.verify(await custom.mint(session))).not.toBeNull();
    });
  });

  describe('kid', () => {
    it('is the RFC 7638 thumbprint of the public key', () => {
      const jwk = createPublicKey(key).export({ format: 'jwk' });
      // RFC 7638 section 3.2: the required members of an EC key, in lexicographic order, no whitespace.
      const canonical = `{"crv":"P-256","kty":"EC","x":"${jwk.x}","y":"${jwk.y}"}`;
      expect(tokens.keys.signingKid).toBe(createHash('sha256').update(canonical).digest('base64url'));
    });

    it('is stable across restarts and differs between keys', () => {
      expect(service({ key }).keys.signingKid).toBe(tokens.keys.signingKid);
      expect(service().keys.signingKid).not.toBe(tokens.keys.signingKid);
    });

    it('is listed in the JWKS with the public key only', () => {
      const jwks = tokens.keys.jwks();
      const jwk = createPublicKey(key).export({ format: 'jwk' });
      expect(jwks).toStrictEqual({
        keys: [{ kty: 'EC', crv: 'P-256', x: jwk.x, y: jwk.y, kid: tokens.keys.signingKid, alg: 'ES256', use: 'sig' }],
      });
    });
  });

  describe('rotation', () => {
    it('previous public keys still verify what they signed; the JWKS lists them all', async () => {
      const oldKey = ecKey();
      const before = service({ key: oldKey });
      const issuedBefore = await before.mint(session);

      const after = service({ key: ecKey(), previous: [oldKey] });
      expect(after.verify(issuedBefore)).toMatchObject({ sub: session.userId });
      expect(after.verify(await after.mint(session))).not.toBeNull();
      expect(
        after.keys
          .jwks()
          .keys.map((k) => k.kid)
          .sort(),
      ).toEqual([before.keys.signingKid, after.keys.signingKid].sort());
    });

    it('a retired key (no longer listed) does not verify', async () => {
      const oldKey = ecKey();
      const issued = await service({ key: oldKey }).mint(session);
      expect(service({ key: ecKey() }).verify(issued)).toBeNull();
    });
  });

  describe('refuses (verify -> null)', () => {
    it('a token from an unknown kid', async () => {
      expect(tokens.verify(await service().mint(session))).toBeNull();
    });

    it('a token signed by another key under our kid', async () => {
      const forged = jwt.sign({ ...parts(await tokens.mint(session)).payload }, ecKey(), {
        algorithm: 'ES256',
        keyid: tokens.keys.signingKid,
      });
      expect(tokens.verify(forged)).toBeNull();
    });

    it('a tampered payload', async () => {
      const token = await tokens.mint(session);
      const { payload, signature } = parts(token);
      const header = token.split('.')[0];
      expect(tokens.verify(`${header}.${b64({ ...payload, org: randomUUID() })}.${signature}`)).toBeNull();
      expect(tokens.verify(`${header}.${b64({ ...payload, exp: payload.exp + 3600 })}.${signature}`)).toBeNull();
    });

    it('a tampered signature', async () => {
      const token = await tokens.mint(session);
      expect(tokens.verify(tamperSignature(token))).toBeNull();
    });

    it('alg: none', async () => {
      const { payload } = parts(await tokens.mint(session));
      expect(
        tokens.verify(`${b64({ alg: 'none', typ: 'JWT', kid: tokens.keys.signingKid })}.${b64(payload)}.`),
      ).toBeNull();
    });

    it('alg: HS256 keyed with our public key (algorithm confusion)', async () => {
      const { payload } = parts(await tokens.mint(session));
      const body = `${b64({ alg: 'HS256', typ: 'JWT', kid: tokens.keys.signingKid })}.${b64(payload)}`;
      const signature = createHmac('sha256', publicPem(key)).update(body).digest('base64url');
      expect(tokens.verify(`${body}.${signature}`)).toBeNull();
    });

    it('a valid ES256 signature under a header that names another algorithm', async () => {
      const token = await tokens.mint(session);
      const [, payload, signature] = token.split('.');
      const header = b64({ alg: 'ES384', typ: 'JWT', kid: tokens.keys.signingKid });
      expect(tokens.verify(`${header}.${payload}.${signature}`)).toBeNull();
    });

    it('an expired token', async () => {
      const token = await tokens.mint({ ...session, lifetimeSeconds: 60 });
      const now = Date.now();
      jest.spyOn(Date, 'now').mockReturnValue(now + 61_000);
      expect(tokens.verify(token)).toBeNull();
      jest.spyOn(Date, 'now').mockReturnValue(now + 30_000);
      expect(tokens.verify(token)).not.toBeNull();
    });

    it('another issuer or audience', async () => {
      expect(
        tokens.verify(await service({ key, env: { JWT_ISSUER: 'https://other.example' } }).mint(session)),
      ).toBeNull();
      expect(tokens.verify(await service({ key, env: { JWT_AUDIENCE: 'other' } }).mint(session))).toBeNull();
    });

    it("a resource server's audience: not Gatehouse's (authenticate), but a valid token of ours (verifiedToken)", async () => {
      const token = await tokens.mint({ ...access, audience: 'https://orders.example.com' });
      expect(tokens.verify(token)).toBeNull();
      expect(tokens.forOwnApi(token)).toBeNull();
      expect(tokens.verifiedToken(token)?.claims.aud).toBe('https://orders.example.com');
    });

    it.each([
      ['no org', { org: undefined }],
      ['a sub that is not a UUID', { sub: 'root' }],
      ['an unknown token_use', { token_use: 'refresh' }],
      ['a session token with a client_id', { client_id: randomUUID() }],
      ['a session token with an akid', { akid: randomUUID() }],
      ['an access token without a client_id', { token_use: 'access' }],
      ['an access token with a non-UUID client_id', { token_use: 'access', client_id: 'k1' }],
      ['an access token with a non-UUID akid', { token_use: 'access', akid: 'k1' }],
      [
        'an access token whose akid is not its client_id',
        { token_use: 'access', client_id: randomUUID(), akid: randomUUID() },
      ],
      [
        'an access token with a UUID client_id and a non-UUID akid',
        { token_use: 'access', client_id: randomUUID(), akid: 'k1' },
      ],
      ['an access token with a scope that is not a string', { token_use: 'access', client_id: randomUUID(), scope: 7 }],
      ['a session token with a scope', { scope: 'api_keys:read' }],
      ['no jti', { jti: undefined }],
    ])('well-signed claims with %s', async (_name, change) => {
      const { payload } = parts(await tokens.mint(session));
      const forged = jwt.sign({ ...payload, ...change }, key, { algorithm: 'ES256', keyid: tokens.keys.signingKid });
      expect(tokens.verify(forged)).toBeNull();
    });

    it.each([[''], ['garbage'], ['a.b.c'], ['..']])('the garbage %j', (token) => {
      expect(tokens.verify(token)).toBeNull();
    });
  });
});

describe('SigningKeys', () => {
  it('refuses a key that is not EC P-256', () => {
    const rsa = generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey;
    expect(() => new SigningKeys(pem(rsa))).toThrow('JWT keys must be EC P-256 keys (ES256)');
    const p384 = generateKeyPairSync('ec', { namedCurve: 'P-384' }).privateKey;
    expect(() => new SigningKeys(pem(p384))).toThrow('JWT keys must be EC P-256 keys (ES256)');
    expect(() => new SigningKeys(pem(ecKey()), [publicPem(p384)])).toThrow('JWT keys must be EC P-256 keys (ES256)');
  });

  it('parses the keys once into KeyObjects', () => {
    const keys = new SigningKeys(pem(ecKey()));
    expect(keys.signingKey).toBeInstanceOf(KeyObject);
    expect(keys.verificationKey(keys.signingKid)).toBeInstanceOf(KeyObject);
    expect(keys.verificationKey('unknown')).toBeUndefined();
  });

  describe('verified-token memory', () => {
    const key = ecKey();
    const access: MintRequest = {
      userId: randomUUID(),
      organizationId: randomUUID(),
      tokenUse: 'access',
      credentialId: randomUUID(),
      lifetimeSeconds: 1800,
    };
    afterEach(() => jest.restoreAllMocks());

    it("verifies a token's signature once and still refuses it once it has expired", async () => {
      const local = service({ key });
      const token = await local.mint({ ...access, lifetimeSeconds: 60 });
      const verify = jest.spyOn(JwtService.prototype, 'verify');
      const first = local.verify(token);
      const second = local.verify(token);
      expect(second).toStrictEqual(first);
      expect(first).not.toBeNull();
      expect(verify).toHaveBeenCalledTimes(1);

      const now = Date.now();
      jest.spyOn(Date, 'now').mockReturnValue(now + 61_000);
      expect(local.verify(token)).toBeNull();
      expect(local.verify(token)).toBeNull();
    });

    it('never remembers a token that failed', async () => {
      const local = service({ key });
      const token = await local.mint(access);
      const tampered = tamperSignature(token);
      const verify = jest.spyOn(JwtService.prototype, 'verify');
      expect(local.verify(tampered)).toBeNull();
      expect(local.verify(tampered)).toBeNull();
      expect(verify).toHaveBeenCalledTimes(2);
    });
  });
});
