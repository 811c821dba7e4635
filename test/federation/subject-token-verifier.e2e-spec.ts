import { createPublicKey } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, SignJWT } from 'jose';
import { DEFAULT_FEDERATION_TIMINGS, FEDERATION_TIMINGS } from '../../src/federation/federation-timings';
import {
  RefusedSubjectToken,
  SubjectTokenOutcome,
  SubjectTokenVerifier,
} from '../../src/federation/subject-token-verifier';
import type { IssuerKind, TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { freezeDate } from '../support/clock';
import { b64 } from '../support/http-assertions';
import { IdentityProvider, newSigningKey } from '../support/identity-provider';
import { createTestApp, TEST_ISSUER, TestApp } from '../support/test-app';

/** Subject tokens of the token exchange (docs/federation.md#subject-tokens), from a live identity provider. */
describe('subject token verification', () => {
  const COOLDOWN_MS = 1500;
  const REDIRECT_URI = 'http://127.0.0.1:9/console/sso/callback';
  let t: TestApp;
  let idp: IdentityProvider;
  let verifier: SubjectTokenVerifier;
  let issuers: TrustedIssuersService;
  let workloadEntry: TrustedIssuer;
  let peopleEntry: TrustedIssuer;
  const now = () => Math.floor(Date.now() / 1000);
  /**
   * The service's clock moved past the key set's cooldown (jose counts it with Date): the tests that use this freeze
   * the clock first (freezeDate), so that "within the cooldown" holds however slow the machine, and nothing waits.
   */
  const pastCooldown = (): void => jest.setSystemTime(Date.now() + COOLDOWN_MS + 1);

  beforeAll(async () => {
    [t, idp] = await Promise.all([
      // A short cooldown between key set fetches, so that a rotation is seen within the test.
      createTestApp({
        override: (builder) =>
          builder
            .overrideProvider(FEDERATION_TIMINGS)
            .useValue({ ...DEFAULT_FEDERATION_TIMINGS, jwksCooldownMs: COOLDOWN_MS }),
      }),
      IdentityProvider.start({
        redirectUris: [REDIRECT_URI],
        workloadClaims: { repository: 'acme/deploy', ref: 'refs/heads/main' },
      }),
    ]);
    await t.user({ org: 'verify-acme' });
    verifier = t.get(SubjectTokenVerifier);
    issuers = t.get(TrustedIssuersService);
    // Gatehouse's issuer URL as the audience, as entries had it before the per-organization default.
    workloadEntry = await issuers.add({
      organization: 'verify-acme',
      issuer: idp.issuer,
      kind: 'workloads',
      audience: TEST_ISSUER,
      emailDomains: [],
    });
    peopleEntry = await issuers.add({
      organization: 'verify-acme',
      issuer: idp.issuer,
      kind: 'people',
      clientId: idp.people.clientId,
      clientSecret: idp.people.clientSecret,
      emailDomains: [],
    });
  }, 30_000);
  afterAll(async () => {
    await IdentityProvider.stopAll();
    await t.close();
  });
  afterEach(() => jest.useRealTimers());

  const refusal = async (token: string, kind: IssuerKind = 'workloads') => {
    const outcome = await verifier.verify(token, kind);
    if (outcome.ok) throw new Error(`accepted: ${JSON.stringify(outcome.claims)}`);
    return outcome.reason;
  };
  const accepted = async (token: string, kind: IssuerKind = 'workloads') => {
    const outcome: SubjectTokenOutcome = await verifier.verify(token, kind);
    if (!outcome.ok) throw new Error(`refused: ${outcome.reason} (${outcome.detail})`);
    return outcome;
  };
  /** Claims a workload token of the provider has, at `iat` (seconds from now). */
  const claims = (overrides: Record<string, unknown> = {}) => ({
    iss: idp.issuer,
    sub: 'ci-runner',
    aud: TEST_ISSUER,
    iat: now(),
    exp: now() + 600,
    jti: 'j1',
    ...overrides,
  });

  it("accepts the provider's workload JWT (client credentials for Gatehouse's issuer URL), with its claims", async () => {
    const token = await idp.workloadToken(TEST_ISSUER);
    expect(decodeProtectedHeader(token)).toMatchObject({ alg: 'RS256', typ: 'at+jwt', kid: idp.keys[0].kid });
    const outcome = await accepted(token);
    expect(outcome.issuers.map((entry) => entry.id)).toEqual([workloadEntry.id]);
    expect(outcome.claims).toMatchObject({
      iss: idp.issuer,
      sub: idp.workload.clientId,
      aud: TEST_ISSUER,
      client_id: idp.workload.clientId,
      repository: 'acme/deploy',
      ref: 'refs/heads/main',
    });
    expect(outcome.claims.exp - outcome.claims.iat).toBe(600);
    // The same token is not a people token: its audience is not the people client.
    expect(await refusal(token, 'people')).toBe('wrong_audience');
  });

  it("accepts a person's ID token (code flow with PKCE through the provider's own login page) as people only", async () => {
    const nonce = 'n-0S6_WzA2Mj';
    const idToken = await idp.idToken('alice@example.com', REDIRECT_URI, nonce);
    const outcome = await accepted(idToken, 'people');
    expect(outcome.issuers.map((entry) => entry.id)).toEqual([peopleEntry.id]);
    expect(outcome.claims).toMatchObject({
      iss: idp.issuer,
      sub: 'alice@example.com',
      aud: idp.people.clientId,
      email: 'alice@example.com',
      email_verified: true,
      nonce,
    });
    expect(await refusal(idToken, 'workloads')).toBe('wrong_audience');
  });

  it('refuses a forged signature, a changed payload and an unknown kid: bad_signature', async () => {
    freezeDate(Date.now());
    const stranger = newSigningKey();
    // Another key under the provider's kid.
    expect(await refusal(await idp.sign(claims(), { key: stranger, kid: idp.keys[0].kid }))).toBe('bad_signature');
    // A real token whose payload was changed after signing.
    const [header, , signature] = (await idp.workloadToken(TEST_ISSUER)).split('.');
    const changed = b64({ ...decodeJwt(await idp.workloadToken(TEST_ISSUER)), sub: 'someone-else' });
    expect(await refusal(`${header}.${changed}.${signature}`)).toBe('bad_signature');
    // A key the provider never published (the key set is fetched again, once per cooldown, and has no such kid).
    pastCooldown();
    expect(await refusal(await idp.sign(claims(), { key: stranger }))).toBe('bad_signature');
  });

  it('refuses expired and future-dated tokens beyond 60 s of leeway, and a lifetime over an hour', async () => {
    expect(await refusal(await idp.sign(claims({ iat: now() - 900, exp: now() - 61 })))).toBe('expired');
    await accepted(await idp.sign(claims({ iat: now() - 900, exp: now() - 50 })));
    expect(await refusal(await idp.sign(claims({ iat: now() + 120, exp: now() + 600 })))).toBe('not_yet_valid');
    expect(await refusal(await idp.sign(claims({ nbf: now() + 120 })))).toBe('not_yet_valid');
    await accepted(await idp.sign(claims({ iat: now() + 30, nbf: now() + 30 })));
    const iat = now();
    expect(await refusal(await idp.sign(claims({ iat, exp: iat + 3601 })))).toBe('lifetime_too_long');
    await accepted(await idp.sign(claims({ iat, exp: iat + 3600 })));
  });

  it('refuses a token for another audience; an audience list that contains the configured one is accepted', async () => {
    expect(await refusal(await idp.workloadToken('https://other.example.com'))).toBe('wrong_audience');
    expect(await refusal(await idp.sign(claims({ aud: `${TEST_ISSUER}/` })))).toBe('wrong_audience');
    expect(await refusal(await idp.sign(claims({ aud: undefined })))).toBe('wrong_audience');
    await accepted(await idp.sign(claims({ aud: ['https://other.example.com', TEST_ISSUER] })));
  });

  it('refuses alg none and HS256 signed with the public key (as a shared secret): algorithm_not_allowed', async () => {
    expect(await refusal(`${b64({ alg: 'none', typ: 'JWT' })}.${b64(claims())}.`)).toBe('algorithm_not_allowed');
    const publicKey = createPublicKey(idp.keys[0].privateKey);
    for (const secret of [
      publicKey.export({ type: 'spki', format: 'pem' }),
      JSON.stringify(publicKey.export({ format: 'jwk' })),
    ]) {
      const hs256 = await new SignJWT(claims())
        .setProtectedHeader({ alg: 'HS256', kid: idp.keys[0].kid })
        .sign(new TextEncoder().encode(String(secret)));
      expect(await refusal(hs256)).toBe('algorithm_not_allowed');
    }
    expect(
      await refusal(await new SignJWT(claims()).setProtectedHeader({ alg: 'HS512' }).sign(new Uint8Array(64))),
    ).toBe('algorithm_not_allowed');
  });

  it('refuses an oversized token before reading it, and tokens that are not a signed JWT with iss, sub, iat and exp', async () => {
    const oversized = await idp.sign(claims({ padding: 'x'.repeat(16 * 1024) }));
    const outcome = (await verifier.verify(oversized, 'workloads')) as RefusedSubjectToken;
    expect(outcome).toStrictEqual({
      ok: false,
      reason: 'too_large',
      issuer: null,
      detail: `${oversized.length} characters, more than 16384`,
    });
    for (const token of ['', 'abc', 'a.b.c', `${b64({ alg: 'RS256' })}.not-json.sig`, 'a.b.c.d.e']) {
      expect(await refusal(token)).toBe('malformed');
    }
    expect(await refusal(await idp.sign(claims({ iss: undefined })))).toBe('malformed');
    expect(await refusal(await idp.sign(claims({ sub: undefined })))).toBe('malformed');
    expect(await refusal(await idp.sign(claims({ iat: undefined })))).toBe('malformed');
    expect(await refusal(await idp.sign(claims({ exp: undefined })))).toBe('malformed');
    expect(await refusal(await idp.sign(claims(), { typ: 'logout+jwt' }))).toBe('malformed');
    expect(
      await refusal(await idp.sign(claims({ events: { 'http://schemas.openid.net/event/backchannel-logout': {} } }))),
    ).toBe('malformed');
  });

  it('refuses an issuer no organization trusts (for that kind): unknown_issuer, naming it', async () => {
    const outcome = await verifier.verify(
      await idp.sign(claims({ iss: 'https://login.unknown.example' })),
      'workloads',
    );
    expect(outcome).toMatchObject({ ok: false, reason: 'unknown_issuer', issuer: 'https://login.unknown.example' });
    // A trusted issuer, but not with a trailing slash.
    expect(await refusal(await idp.sign(claims({ iss: `${idp.issuer}/` })))).toBe('unknown_issuer');
    expect(await refusal(await idp.sign(claims({ iss: `https://${'a'.repeat(300)}.example` })))).toBe('unknown_issuer');
  });

  it('picks up a key rotation through the key set: the new key after the cooldown, the old one while published', async () => {
    freezeDate(Date.now());
    const old = await idp.workloadToken(TEST_ISSUER);
    const [next, unknown] = [newSigningKey(), newSigningKey()];
    const unknownKid = await idp.sign(claims(), { key: unknown });
    // A fetch of the key set right now (an unknown kid), so the cooldown starts here.
    pastCooldown();
    expect(await refusal(unknownKid)).toBe('bad_signature');
    const rotated = await idp.rotateSigningKey({ keepPrevious: true, key: next });
    const fresh = await idp.workloadToken(TEST_ISSUER);
    expect(decodeProtectedHeader(fresh).kid).toBe(rotated.kid);
    // Within the cooldown the key set is not fetched again: at most one fetch per cooldown, whatever kids come.
    expect(await refusal(fresh)).toBe('bad_signature');
    pastCooldown();
    await accepted(fresh);
    await accepted(old);

    // The old key withdrawn: refused once the key set has been fetched again (here for the newest key's kid).
    const newest = await idp.rotateSigningKey({ keepPrevious: false });
    pastCooldown();
    await accepted(await idp.workloadToken(TEST_ISSUER));
    expect(decodeProtectedHeader(await idp.workloadToken(TEST_ISSUER)).kid).toBe(newest.kid);
    expect(await refusal(old)).toBe('bad_signature');
    expect(await refusal(fresh)).toBe('bad_signature');
  });

  describe('an issuer that cannot be reached: issuer_unavailable, in bounded time', () => {
    const trust = async (provider: IdentityProvider, audience: string) =>
      issuers.add({
        organization: 'verify-acme',
        issuer: provider.issuer,
        kind: 'workloads',
        audience,
        emailDomains: [],
      });

    it('stopped before its keys were ever fetched: refused at once, then accepted when it is back', async () => {
      const down = await IdentityProvider.start();
      await trust(down, 'https://gatehouse-down.example');
      const token = await down.workloadToken('https://gatehouse-down.example');
      await down.stop();
      const started = Date.now();
      const outcome = await verifier.verify(token, 'workloads');
      expect(outcome).toMatchObject({ ok: false, reason: 'issuer_unavailable', issuer: down.issuer });
      expect((outcome as RefusedSubjectToken).detail).toMatch(
        new RegExp(`^cannot fetch ${down.issuer}/\\.well-known/openid-configuration: connect ECONNREFUSED`),
      );
      expect(Date.now() - started).toBeLessThan(2000);
      await down.restart();
      await accepted(token);
    });

    it('silent (connections accepted, nothing answered): refused after the 3 s time-out, never a hang', async () => {
      const silent = await IdentityProvider.start();
      await trust(silent, 'https://gatehouse-silent.example');
      const token = await silent.workloadToken('https://gatehouse-silent.example');
      await silent.setUnresponsive(true);
      const started = Date.now();
      const outcome = await verifier.verify(token, 'workloads');
      const elapsed = Date.now() - started;
      expect(outcome).toMatchObject({ ok: false, reason: 'issuer_unavailable', issuer: silent.issuer });
      expect((outcome as RefusedSubjectToken).detail).toMatch(/no answer within 3 s$/);
      expect(elapsed).toBeGreaterThanOrEqual(2900);
      expect(elapsed).toBeLessThan(6000);
    }, 20_000);

    it('keys already fetched keep working while the issuer is down; an unknown kid then needs the issuer', async () => {
      freezeDate(Date.now());
      const flaky = await IdentityProvider.start();
      await trust(flaky, 'https://gatehouse-flaky.example');
      const token = await flaky.workloadToken('https://gatehouse-flaky.example');
      await accepted(token);
      await flaky.stop();
      await accepted(token);
      pastCooldown();
      const unknownKid = await flaky.sign(claims({ iss: flaky.issuer, aud: 'https://gatehouse-flaky.example' }), {
        key: newSigningKey(),
      });
      const outcome = await verifier.verify(unknownKid, 'workloads');
      expect(outcome).toMatchObject({ ok: false, reason: 'issuer_unavailable' });
      expect((outcome as RefusedSubjectToken).detail).toMatch(
        /^cannot fetch the key set http:\/\/127\.0\.0\.1:\d+\/jwks: /,
      );
    });
  });

  it('refuses the tokens of an issuer once it is removed', async () => {
    const token = await idp.workloadToken(TEST_ISSUER);
    await accepted(token);
    await issuers.remove(workloadEntry.id);
    expect(await refusal(token)).toBe('unknown_issuer');
  });
});
