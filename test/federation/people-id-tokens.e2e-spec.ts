import { randomUUID } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader } from 'jose';
import { DataSource } from 'typeorm';
import { idTokenKey, IdTokenUses } from '../../src/federation/id-token-uses';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { IdentityService } from '../../src/identity/identity.service';
import { MetricsServer } from '../../src/metrics/metrics.server';
import { auditPage } from '../support/audit-events';
import { IdentityProvider } from '../support/identity-provider';
import { rowCount, signInRows } from '../support/row-counts';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import {
  ID_TOKEN_TYPE,
  JWT_TYPE,
  SUBJECT_TOKEN_REFUSED as REFUSED,
  TOKEN_EXCHANGE_GRANT as GRANT,
} from '../support/token-exchange';

const REDIRECT_URI = 'http://127.0.0.1:9/callback';
/** Gatehouse's client id at the second provider, which is also its API's identifier there (as Entra ID's may be). */
const API_CLIENT_ID = 'https://api.px.example';
const API_PERSON = 'api-person@px.example';

/**
 * The people token exchange takes ID tokens issued to Gatehouse, each once (docs/federation.md#people-id-tokens):
 * against node-oidc-provider's own ID tokens (code flow) and access tokens (at+jwt), and tokens signed with its
 * published key where a claim or header must be one it does not issue.
 */
describe(`people token exchange: ID tokens, each once (${DATABASE_KIND})`, () => {
  let t: TestApp;
  let idp: IdentityProvider;
  let api: IdentityProvider;
  let admin: TestUser;
  let member: TestUser;
  let apiAdmin: TestUser;

  const exchangeAt = (app: TestApp, token: string) =>
    app
      .http()
      .post('/oauth/token')
      .type('form')
      .send({ grant_type: GRANT, subject_token: token, subject_token_type: ID_TOKEN_TYPE });
  const exchange = (token: string) => exchangeAt(t, token);
  /** An ID token of the member as the provider would sign it (a jti of its own), with `claims` over it. */
  const signed = (claims: Record<string, unknown> = {}, typ?: string, provider = idp) => {
    const now = Math.floor(Date.now() / 1000);
    return provider.sign(
      {
        iss: provider.issuer,
        sub: 'member-1',
        aud: provider === idp ? idp.people.clientId : API_CLIENT_ID,
        iat: now,
        exp: now + 300,
        email: provider === idp ? member.email : API_PERSON,
        email_verified: true,
        jti: randomUUID(),
        ...claims,
      },
      { typ },
    );
  };
  const exchangesCounted = async (outcome: string): Promise<number> => {
    const { address, port } = t.get(MetricsServer).address()!;
    const text = await (await fetch(`http://${address}:${port}/metrics`)).text();
    const sample = new RegExp(`^gatehouse_token_exchanges_total\\{outcome="${outcome}"\\} (\\d+)$`, 'm').exec(text);
    return sample === null ? 0 : Number(sample[1]);
  };
  /** The reasons of the `token.exchange_failed` entries the request answered with `response` wrote. */
  const refusalsAudited = async (response: { headers: Record<string, string> }, as = admin) =>
    (await auditPage(t, as, { action: 'token.exchange_failed', limit: 200 })).audit_events
      .filter((event) => event.request_id === response.headers['x-request-id'])
      .map((event) => event.reason);
  /** Refused with the one invalid_grant, counted and audited with `reason` in the issuer's organization. */
  const expectRefused = async (token: string, reason: string, as = admin) => {
    const before = await exchangesCounted(`subject_token_${reason}`);
    const answer = await exchange(token);
    expect({ status: answer.status, body: answer.body }).toEqual({ status: 400, body: REFUSED });
    expect(await exchangesCounted(`subject_token_${reason}`)).toBe(before + 1);
    expect(await refusalsAudited(answer, as)).toEqual([`subject_token_${reason}`]);
  };
  const expectSession = async (token: string) => {
    const answer = await exchange(token);
    expect({ status: answer.status, type: answer.body.issued_token_type }).toEqual({ status: 200, type: JWT_TYPE });
    return answer;
  };

  beforeAll(async () => {
    [t, idp, api] = await Promise.all([
      createTestApp({ env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '500' } }),
      IdentityProvider.start({ redirectUris: [REDIRECT_URI] }),
      // Its client-credentials tokens carry a person's e-mail address, as an access token for a signed-in user does.
      IdentityProvider.start({ workloadClaims: { email: API_PERSON } }),
    ]);
    admin = await t.user({ org: 'px-acme', role: 'admin' });
    member = await t.user({ org: 'px-acme', role: 'member' });
    apiAdmin = await t.user({ org: 'px-api', role: 'admin' });
    await t.user({ org: 'px-api', role: 'member', email: API_PERSON });
    const issuers = t.get(TrustedIssuersService);
    await issuers.add({
      organization: 'px-acme',
      issuer: idp.issuer,
      kind: 'people',
      clientId: idp.people.clientId,
      clientSecret: idp.people.clientSecret,
      // Just-in-time membership needs the domains it may add people of: the newcomers' and the members'.
      emailDomains: ['people.example', 'example.com'],
      jitRole: 'member',
    });
    await issuers.add({
      organization: 'px-api',
      issuer: api.issuer,
      kind: 'people',
      clientId: API_CLIENT_ID,
      clientSecret: 'api-secret',
      emailDomains: [],
    });
  }, 40_000);
  afterAll(async () => {
    await IdentityProvider.stopAll();
    await t.close();
  });

  it("exchanges the provider's ID token (no typ, no jti, a nonce it never saw) for a session of the member", async () => {
    const idToken = await idp.idToken(member.email, REDIRECT_URI);
    expect(decodeProtectedHeader(idToken).typ).toBeUndefined();
    expect(decodeJwt(idToken)).toMatchObject({ aud: idp.people.clientId, nonce: expect.any(String) });
    expect(decodeJwt(idToken).jti).toBeUndefined();
    const answer = await expectSession(idToken);
    expect(decodeJwt(answer.body.access_token)).toMatchObject({ sub: member.userId, token_use: 'session' });
  });

  describe('takes ID tokens only', () => {
    it("refuses the provider's own at+jwt access token whose aud is Gatehouse's client id, for a member", async () => {
      const accessToken = await api.workloadToken(API_CLIENT_ID);
      expect(decodeProtectedHeader(accessToken).typ).toBe('at+jwt');
      expect(decodeJwt(accessToken)).toMatchObject({ aud: API_CLIENT_ID, email: API_PERSON });
      await expectRefused(accessToken, 'not_an_id_token', apiAdmin);
    });

    it.each([['absent'], ['JWT'], ['jwt'], ['application/JWT']])('takes the typ %s', async (typ) => {
      await expectSession(await signed({}, typ === 'absent' ? undefined : typ));
    });

    it.each([['at+jwt'], ['application/at+jwt'], ['AT+JWT']])('refuses the typ %s as no ID token', async (typ) => {
      await expectRefused(await signed({}, typ), 'not_an_id_token');
    });

    it.each([
      ['scp (Entra ID, Okta)', { scp: 'access_as_user' }],
      ['scope', { scope: 'openid email' }],
      ["RFC 9068's client_id", { client_id: 'gatehouse-console' }],
    ])("refuses a typ JWT token with an access token's %s claim", async (_name, claims) => {
      await expectRefused(await signed(claims, 'JWT'), 'not_an_id_token');
    });
  });

  describe('issued to Gatehouse (azp, OpenID Connect Core 3.1.3.7)', () => {
    it('takes an azp that is its client id, with one audience or several', async () => {
      await expectSession(await signed({ azp: idp.people.clientId }));
      await expectSession(await signed({ aud: [idp.people.clientId, 'other-app'], azp: idp.people.clientId }));
    });

    it.each([
      ['an azp of another client', () => ({ azp: 'other-app' })],
      ['several audiences and no azp', () => ({ aud: [idp.people.clientId, 'other-app'] })],
      [
        'several audiences, the other one as azp',
        () => ({ aud: [idp.people.clientId, 'other-app'], azp: 'other-app' }),
      ],
    ])('refuses %s', async (_name, claims) => {
      await expectRefused(await signed(claims()), 'wrong_authorized_party');
    });
  });

  it('takes a token with no nonce or a nonce it cannot compare; refuses a nonce that is no string', async () => {
    await expectSession(await signed({ nonce: undefined }));
    await expectSession(await signed({ nonce: 'n-0S6_WzA2Mj' }));
    await expectRefused(await signed({ nonce: 42 }), 'malformed');
  });

  describe('each ID token gives one session', () => {
    it('refuses a replay of the same ID token, and it creates nothing (a just-in-time member is made once)', async () => {
      const email = `newcomer-${randomUUID().slice(0, 8)}@people.example`;
      const idToken = await idp.idToken(email, REDIRECT_URI);
      const first = await expectSession(idToken);
      const userId = await t.get(IdentityService).userIdByEmail(email);
      expect(decodeJwt(first.body.access_token).sub).toBe(userId);
      const rows = await signInRows(t);
      const uses = await rowCount(t, 'id_token_uses');
      for (let replay = 0; replay < 2; replay += 1) await expectRefused(idToken, 'replayed');
      expect(await signInRows(t)).toEqual({ ...rows, audit: rows.audit + 2 });
      expect(await rowCount(t, 'id_token_uses')).toBe(uses);
    });

    it('knows a token by its jti, per issuer: another token with a used jti is a replay, of another issuer not', async () => {
      const jti = randomUUID();
      await expectSession(await signed({ jti, sub: 'first' }));
      await expectRefused(await signed({ jti, sub: 'second', iat: Math.floor(Date.now() / 1000) - 5 }), 'replayed');
      await expectSession(await signed({ jti }, undefined, api));
    });

    it('two exchanges of one token at once, on one instance: exactly one session', async () => {
      for (const idToken of [await idp.idToken(member.email, REDIRECT_URI), await signed(), await signed()]) {
        const answers = await Promise.all([exchange(idToken), exchange(idToken)]);
        expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400]);
        expect(answers.find((answer) => answer.status === 400)!.body).toEqual(REFUSED);
      }
    });

    it('two exchanges of one token at once, on two instances of one database: exactly one session', async () => {
      const replica = await createTestApp({ database: t.database, env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '500' } });
      try {
        for (const idToken of [await idp.idToken(member.email, REDIRECT_URI), await signed(), await signed()]) {
          const answers = await Promise.all([exchangeAt(t, idToken), exchangeAt(replica, idToken)]);
          expect(answers.map((answer) => answer.status).sort()).toEqual([200, 400]);
          expect(answers.find((answer) => answer.status === 400)!.body).toEqual(REFUSED);
        }
      } finally {
        await replica.close();
      }
    }, 30_000);

    it('remembers a use until the token can no longer be accepted (exp and the 60 s leeway), then prunes it', async () => {
      const token = await signed();
      await expectSession(token);
      const claims = decodeJwt(token) as { iss: string; jti: string; exp: number };
      const key = idTokenKey(claims, token);
      const stored = () =>
        t
          .get(DataSource)
          .query<Array<{ expires_at: string | Date }>>(
            `SELECT expires_at FROM id_token_uses WHERE token_key = '${key}'`,
          );
      const [row] = await stored();
      expect(new Date(row.expires_at).getTime()).toBe((claims.exp + 60) * 1000);
      const uses = t.get(IdTokenUses);
      expect(await uses.prune(new Date((claims.exp + 59) * 1000))).toBeGreaterThanOrEqual(0);
      expect(await stored()).toHaveLength(1);
      await expectRefused(token, 'replayed');
      // An hour and a minute later every token of this suite has expired: all are gone.
      expect(await uses.prune(new Date(Date.now() + 3660_000))).toBeGreaterThan(0);
      expect(await stored()).toEqual([]);
      expect(await rowCount(t, 'id_token_uses')).toBe(0);
    });
  });
});
