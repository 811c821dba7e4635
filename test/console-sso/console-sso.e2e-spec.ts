import { randomBytes } from 'node:crypto';
import { decodeJwt, type JWTPayload } from 'jose';
import type { CustomFetch } from 'openid-client';
import type { Response } from 'supertest';
import { DataSource } from 'typeorm';
import { AuditService } from '../../src/audit/audit.service';
import { runTestCli } from '../support/cli';
import { SSO_FETCH, ssoFetch } from '../../src/console-sign-in/sso/sso-client';
import { DEFAULT_SSO_SETTINGS, SSO_SETTINGS } from '../../src/console-sign-in/sso/sso-settings';
import type { TokenEndpointAuthMethod, TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { IdentityService } from '../../src/identity/identity.service';
import type { Role } from '../../src/identity/roles';
import { bearer } from '../support/http-assertions';
import { IdentityProvider } from '../support/identity-provider';
import { rowCount, signInRows } from '../support/row-counts';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/**
 * Console single sign-on (docs/console.md#single-sign-on) against node-oidc-provider as the organization's identity
 * provider, its login and consent pages driven over HTTP: the start, the callback on another instance, the refusals
 * (each leaving nothing behind), the just-in-time members and a provider that does not answer.
 */
describe(`console single sign-on (${DATABASE_KIND})`, () => {
  const BASE = 'https://gatehouse.example.com';
  const ORG = 'sso-acme';
  /**
   * The contract's redirect URI, registered at the provider: node-oidc-provider announces RFC 9207's `iss`, so the
   * shared one (docs/adr/0042-sso-redirect-uri-per-organization.md; the mix-up spec covers providers without it).
   */
  const CALLBACK = `${BASE}/v1/console/sso/callback`;
  /** The binding cookie removed (it is sent to the callbacks and to POST /v1/console/sessions). */
  const CLEARED = 'gatehouse_sso=; Path=/v1/console; Max-Age=0; HttpOnly; SameSite=Lax; Secure';
  let idp: IdentityProvider;
  let t: TestApp;
  let second: TestApp;
  let member: TestUser;
  let entry: TrustedIssuer;

  /** Rewrites the claims of the ID token the token endpoint answers, re-signed with the provider's own key. */
  let tamper: ((claims: JWTPayload) => JWTPayload) | undefined;
  /** The last request to the token endpoint, as Gatehouse sent it. */
  let tokenRequest: { headers: Record<string, string>; body: string } | undefined;
  const providerFetch: CustomFetch = async (url, options) => {
    const response = await ssoFetch(true)(url, options);
    if (url !== idp.tokenEndpoint) return response;
    tokenRequest = { headers: options.headers, body: new URLSearchParams(options.body as URLSearchParams).toString() };
    if (tamper === undefined || response.status !== 200) return response;
    const body = (await response.json()) as { id_token: string };
    body.id_token = await idp.sign(tamper(decodeJwt(body.id_token)));
    return new Response(JSON.stringify(body), { status: 200, headers: { 'content-type': 'application/json' } });
  };

  beforeAll(async () => {
    idp = await IdentityProvider.start({ redirectUris: [CALLBACK] });
    t = await createTestApp({
      env: { PUBLIC_BASE_URL: BASE },
      // More starts a minute than the suite makes from its one address (the limit has a test of its own, below).
      override: (builder) =>
        builder
          .overrideProvider(SSO_FETCH)
          .useValue(providerFetch)
          .overrideProvider(SSO_SETTINGS)
          .useValue({ ...DEFAULT_SSO_SETTINGS, startsPerMinute: 1000 }),
    });
    // A second instance on the same database: a sign-in started on one completes on the other.
    second = await createTestApp({ database: t.database, env: { PUBLIC_BASE_URL: BASE } });
    member = await t.user({ org: ORG, email: 'dana@acme.test', role: 'member' });
    await t.user({ org: 'sso-elsewhere', email: 'olga@acme.test' });
    entry = await trust({});
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    await IdentityProvider.stopAll();
    await second?.close();
    await t?.close();
  });
  afterEach(() => {
    tamper = undefined;
  });

  /** The organization's people issuer, set up again with these settings (a people issuer serves one organization). */
  async function trust(options: {
    emailDomains?: string[];
    jitRole?: Role;
    tokenEndpointAuth?: TokenEndpointAuthMethod;
  }): Promise<TrustedIssuer> {
    const issuers = t.get(TrustedIssuersService);
    if (entry !== undefined) await issuers.remove(entry.id);
    entry = await issuers.add({
      organization: ORG,
      issuer: idp.issuer,
      kind: 'people',
      clientId: idp.people.clientId,
      clientSecret: idp.people.clientSecret,
      emailDomains: options.emailDomains ?? [],
      jitRole: options.jitRole,
      tokenEndpointAuth: options.tokenEndpointAuth,
    });
    return entry;
  }

  interface Started {
    location: URL;
    cookie: string;
  }

  async function start(app: TestApp = t, org = ORG): Promise<Started> {
    const response = await app.http().get('/v1/console/sso').query({ org });
    expect({ status: response.status, body: response.body }).toEqual({ status: 302, body: {} });
    const cookie = (response.headers['set-cookie'] as unknown as string[]).find((line) =>
      line.startsWith('gatehouse_sso='),
    );
    return { location: new URL(response.headers.location), cookie: cookie!.split(';')[0] };
  }

  /** The person signs in on the provider's own pages (any password) and consents: the URL it sends them back to. */
  function atProvider(started: Started, login: string): Promise<URL> {
    const request = started.location.searchParams;
    return idp.authorize({
      login,
      redirectUri: request.get('redirect_uri')!,
      state: request.get('state')!,
      nonce: request.get('nonce')!,
      codeChallenge: request.get('code_challenge')!,
      scope: request.get('scope')!,
    });
  }

  function callback(url: URL, cookie: string | undefined, app: TestApp = t) {
    expect(url.href.startsWith(CALLBACK)).toBe(true);
    const request = app.http().get(`${url.pathname}${url.search}`);
    return cookie === undefined ? request : request.set('Cookie', cookie);
  }

  async function signInAs(login: string): Promise<Response> {
    const started = await start();
    return callback(await atProvider(started, login), started.cookie);
  }

  /** The binding cookie the callback set again with each link, by the link's code: the browser's, which trades it. */
  const browserOf = new Map<string, string>();

  /** The code of the one-time link the callback sends the browser to (its binding cookie kept in browserOf). */
  function linkCode(response: Response): string {
    expect(response.status).toBe(302);
    const location = new URL(response.headers.location);
    expect(`${location.origin}${location.pathname}`).toBe(`${BASE}/console/sign-in`);
    const code = location.hash.replace(/^#code=/, '');
    const [cookie] = response.headers['set-cookie'] as unknown as string[];
    expect(cookie).toMatch(
      /^gatehouse_sso=[A-Za-z0-9_-]{43}; Path=\/v1\/console; Max-Age=600; HttpOnly; SameSite=Lax; Secure$/,
    );
    browserOf.set(code, cookie.split(';')[0]);
    return code;
  }

  /**
   * A refusal page: its status, its text, HTML with the console's headers; the binding cookie removed once the sign-in
   * was used up, and left alone when the callback was not this browser's sign-in (`kept`).
   */
  function expectPage(
    response: Response,
    status: number,
    text: string | RegExp,
    cookie: 'cleared' | 'kept' = 'cleared',
  ): void {
    expect({ status: response.status, type: response.headers['content-type'] }).toEqual({
      status,
      type: 'text/html; charset=utf-8',
    });
    // The page's sentence, as a person reads it (entities decoded; a first letter capitalised, but never an address's).
    const sentence = (/<p class="message message-error" role="alert">(.*)<\/p>/.exec(response.text)?.[1] ?? '')
      .replace(/&quot;/g, '"')
      .replace(/&#39;/g, "'")
      .replace(/&lt;/g, '<')
      .replace(/&gt;/g, '>')
      .replace(/&amp;/g, '&');
    expect(sentence).toMatch(typeof text === 'string' ? text : new RegExp(text.source, 'i'));
    expect(response.text).toContain(`<a class="button button-primary" href="${BASE}/console/sign-in">`);
    expect(response.headers['content-security-policy']).toContain("default-src 'none'");
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.headers['set-cookie']).toEqual(cookie === 'kept' ? undefined : [CLEARED]);
  }

  const count = (table: string) => rowCount(t, table);
  const snapshot = () => signInRows(t);

  /** The console trades the code, in the browser that signed in (its binding cookie), or in `browser` (none: ''). */
  const trade = (code: string, browser = browserOf.get(code) ?? '') =>
    t.http().post('/v1/console/sessions').set('Cookie', browser).send({ code });

  describe('GET /v1/console/sso', () => {
    it("sends the browser to the issuer's authorization endpoint: code, PKCE S256, state, nonce, openid email profile, the contract's redirect URI", async () => {
      const response = await t.http().get('/v1/console/sso').query({ org: ORG });
      expect(response.status).toBe(302);
      expect(response.headers['cache-control']).toBe('no-store');
      expect(response.headers['referrer-policy']).toBe('no-referrer');
      const location = new URL(response.headers.location);
      // The endpoint of the discovery document, nothing a request could choose.
      expect(`${location.origin}${location.pathname}`).toBe(`${idp.issuer}/auth`);
      const query = Object.fromEntries(location.searchParams);
      expect(query).toEqual({
        client_id: idp.people.clientId,
        response_type: 'code',
        scope: 'openid email profile',
        redirect_uri: CALLBACK,
        state: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        nonce: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        code_challenge: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/),
        code_challenge_method: 'S256',
      });
      expect(response.headers['set-cookie']).toEqual([
        expect.stringMatching(
          /^gatehouse_sso=[A-Za-z0-9_-]{43}; Path=\/v1\/console; Max-Age=600; HttpOnly; SameSite=Lax; Secure$/,
        ),
      ]);
      // The state and the binding are stored as hashes only; the nonce and verifier as the callback needs them.
      const rows: Array<Record<string, unknown>> = await t
        .get(DataSource)
        .query('SELECT state_hash, binding_hash, nonce FROM console_sso_requests');
      expect(JSON.stringify(rows)).not.toContain(query.state);
      expect(JSON.stringify(rows)).not.toContain(response.headers['set-cookie'][0].split(/[=;]/)[1]);
      expect(rows.map((row) => row.nonce)).toContain(query.nonce);
    });

    it('answers 404 with the standard body for an unknown organization and one without a people issuer', async () => {
      await t.user({ org: 'sso-workloads-only' });
      await t.get(TrustedIssuersService).add({
        organization: 'sso-workloads-only',
        issuer: idp.issuer,
        kind: 'workloads',
        emailDomains: [],
      });
      for (const org of ['sso-nobody', 'sso-workloads-only', 'sso-elsewhere']) {
        const response = await t.http().get('/v1/console/sso').query({ org });
        expect({ org, status: response.status, body: response.body, location: response.headers.location }).toEqual({
          org,
          status: 404,
          body: { code: 'NOT_FOUND', message: 'no single sign-on for this organization', reason: 'sso_not_configured' },
          location: undefined,
        });
        expect(response.headers['set-cookie']).toBeUndefined();
      }
      for (const query of [{}, { org: '' }, { org: ORG, other: '1' }]) {
        const response = await t.http().get('/v1/console/sso').query(query);
        expect({ status: response.status, body: response.body }).toEqual({
          status: 400,
          body: { code: 'INVALID_ARGUMENT', message: 'invalid request parameters', reason: 'invalid_argument' },
        });
      }
    });

    it('answers a browser (Accept: text/html) with a page that names the organization as typed and leads back', async () => {
      // What Chromium sends when the sign-in form's navigation lands here.
      const BROWSER_ACCEPT = 'text/html,application/xhtml+xml,application/xml;q=0.9,image/avif,image/webp,*/*;q=0.8';
      const typo = await t.http().get('/v1/console/sso').query({ org: 'Acme-Typo <b>' }).set('Accept', BROWSER_ACCEPT);
      expect({ status: typo.status, type: typo.headers['content-type'] }).toEqual({
        status: 404,
        type: 'text/html; charset=utf-8',
      });
      expect(typo.text).toContain('<h1>Single sign-on is not set up</h1>');
      expect(typo.text).toContain(
        'Gatehouse has no single sign-on for the organization “Acme-Typo &lt;b&gt;”. Check its name',
      );
      expect(typo.text).toContain(`<a class="button button-primary" href="${BASE}/console/sign-in">`);
      expect(typo.text).not.toContain('"code"');
      expect(typo.headers['content-security-policy']).toContain("default-src 'none'");
      expect(typo.headers['cache-control']).toBe('no-store');
      expect(typo.headers['set-cookie']).toBeUndefined();
      expect(typo.headers.vary).toBe('Accept');
      // A malformed request: a page too, with the standard sentence.
      const malformed = await t.http().get('/v1/console/sso').set('Accept', BROWSER_ACCEPT);
      expect({ status: malformed.status, type: malformed.headers['content-type'] }).toEqual({
        status: 400,
        type: 'text/html; charset=utf-8',
      });
      expect(malformed.text).toContain('role="alert">Invalid request parameters.</p>');
      // A client that asks for JSON, or for anything, still gets the standard body.
      for (const accept of ['application/json', '*/*', 'application/json, text/html;q=0.5']) {
        const response = await t.http().get('/v1/console/sso').query({ org: 'acme-typo' }).set('Accept', accept);
        expect({ accept, status: response.status, body: response.body }).toEqual({
          accept,
          status: 404,
          body: { code: 'NOT_FOUND', message: 'no single sign-on for this organization', reason: 'sso_not_configured' },
        });
        expect(response.headers.vary).toBe('Accept');
      }
    });
  });

  describe('GET /v1/console/sso/callback', () => {
    it('signs a member in (e-mail in any case), on another instance than the start, as a one-time link does', async () => {
      const started = await start(t);
      const back = await atProvider(started, 'DANA@Acme.Test');
      // The provider sends the browser back to exactly the contract's redirect URI, with its `iss`.
      expect(`${back.origin}${back.pathname}`).toBe(CALLBACK);
      expect(back.searchParams.get('iss')).toBe(idp.issuer);
      const response = await callback(back, started.cookie, second);
      expect(response.headers['cache-control']).toBe('no-store');
      // The same binding, kept for the 10 minutes of the link: the link is this browser's only.
      expect(response.headers['set-cookie']).toEqual([
        `${started.cookie}; Path=/v1/console; Max-Age=600; HttpOnly; SameSite=Lax; Secure`,
      ]);
      const code = linkCode(response);
      expect(code).toMatch(/^[A-Za-z0-9_-]{43}$/);

      // The console trades the code as any link's: the same session token, the same sign-out; the binding removed.
      const session = await trade(code).expect(200);
      expect(session.headers['set-cookie']).toEqual([CLEARED]);
      expect(session.body).toMatchObject({
        token_type: 'Bearer',
        expires_in: 3600,
        user_id: member.userId,
        email: 'dana@acme.test',
        organization: { id: member.organizationId, name: ORG },
        role: 'member',
      });
      const token = session.body.session_token as string;
      await t.http().get('/v1/user-api-keys').set(bearer(token)).expect(200);
      const [signedIn] = await t.get(AuditService).list(member.organizationId, 1);
      expect(signedIn).toMatchObject({
        action: 'console.signed_in',
        actorUserId: member.userId,
        targetType: 'user',
        targetId: member.userId,
        reason: `sso:${entry.id}`,
      });
      await t.http().delete('/v1/console/sessions/current').set(bearer(token)).expect(204);
      await t.http().get('/v1/user-api-keys').set(bearer(token)).expect(401);
      // The link works once, like an administrator's.
      expect((await trade(code)).body).toEqual({
        code: 'UNAUTHENTICATED',
        message: 'sign-in link already used',
        reason: 'sign_in_link_used',
      });
    });

    it("refuses the link in another browser than the one that signed in (login CSRF), leaving it to that browser's", async () => {
      // An attacker signs in with their own account and sends the link they got to someone else.
      const attacker = await start();
      const code = linkCode(await callback(await atProvider(attacker, 'dana@acme.test'), attacker.cookie));
      const before = await t.get(AuditService).list(member.organizationId, 1);
      const refusal = {
        status: 401,
        body: {
          code: 'UNAUTHENTICATED',
          message: 'sign-in link belongs to another browser',
          reason: 'sign_in_link_other_browser',
        },
        challenge: 'SignInLink realm="gatehouse"',
        cookie: undefined,
      };
      const victim = await start();
      // No cookie, another browser's binding (one that started a sign-in of its own), a forged one.
      for (const browser of ['', victim.cookie, `gatehouse_sso=${randomBytes(32).toString('base64url')}`]) {
        const response = await trade(code, browser);
        expect({
          status: response.status,
          body: response.body,
          challenge: response.headers['www-authenticate'],
          cookie: response.headers['set-cookie'],
        }).toEqual(refusal);
      }
      // Nobody signed in; each refusal is audited with its reason; the link is still unused.
      const events = await t.get(AuditService).list(member.organizationId, 4);
      expect(
        events.slice(0, 3).map((event) => [event.action, event.reason, event.targetId, event.actorUserId]),
      ).toEqual(Array(3).fill(['console.sign_in_refused', 'other_browser', member.userId, null]));
      expect(events[3].id).toBe(before[0].id);
      const [link] = await t
        .get(DataSource)
        .query('SELECT used_at FROM console_sign_in_links WHERE binding_hash IS NOT NULL ORDER BY created_at DESC');
      expect(link).toEqual({ used_at: null });
      // The browser that signed in still can, once.
      expect((await trade(code).expect(200)).body.user_id).toBe(member.userId);
      expect((await trade(code, victim.cookie)).body).toEqual({
        code: 'UNAUTHENTICATED',
        message: 'sign-in link already used',
        reason: 'sign_in_link_used',
      });
    });

    it('refuses a replayed callback (the same state) and a replayed code, creating nothing', async () => {
      const started = await start();
      const back = await atProvider(started, 'dana@acme.test');
      linkCode(await callback(back, started.cookie));
      const before = await snapshot();

      expectPage(
        await callback(back, started.cookie),
        400,
        /this sign-in was already completed \(each works once\)/,
        'kept',
      );
      expectPage(await callback(back, started.cookie, second), 400, /already completed/, 'kept');

      // The used code with a new sign-in's state and cookie: the provider refuses it.
      const again = await start();
      const replay = new URL(back);
      replay.searchParams.set('state', again.location.searchParams.get('state')!);
      expectPage(
        await callback(replay, again.cookie),
        400,
        /refused the sign-in code \(invalid_grant; a code works once/,
      );
      expect(await snapshot()).toEqual(before);
    });

    it('completes a callback sent twice at once to two instances exactly once', async () => {
      const started = await start();
      const back = await atProvider(started, 'dana@acme.test');
      const links = await count('console_sign_in_links');
      const answers = await Promise.all([callback(back, started.cookie, t), callback(back, started.cookie, second)]);
      expect(answers.map((answer) => answer.status).sort()).toEqual([302, 400]);
      expect(await count('console_sign_in_links')).toBe(links + 1);
    });

    it('refuses a wrong state, and a state from another browser without using it up', async () => {
      const before = await snapshot();
      const started = await start();
      const back = await atProvider(started, 'dana@acme.test');

      const forged = new URL(back);
      forged.searchParams.set('state', randomBytes(32).toString('base64url'));
      expectPage(await callback(forged, started.cookie), 400, /this sign-in is unknown/, 'kept');
      // Another browser (no cookie, another one's): refused, and the sign-in stays for the browser that started it.
      expectPage(await callback(back, undefined), 400, /started in another browser/, 'kept');
      expectPage(await callback(back, (await start()).cookie), 400, /started in another browser/, 'kept');
      expect(await snapshot()).toEqual(before);
      linkCode(await callback(back, started.cookie));
    });

    it('refuses a sign-in older than 10 minutes', async () => {
      const started = await start();
      const back = await atProvider(started, 'dana@acme.test');
      await t
        .get(DataSource)
        .query(`UPDATE console_sso_requests SET expires_at = '2020-01-01T00:00:00.000Z' WHERE used_at IS NULL`);
      const before = await snapshot();
      expectPage(await callback(back, started.cookie), 400, /this sign-in took longer than 10 minutes/, 'kept');
      expect(await snapshot()).toEqual(before);
    });

    it("shows the provider's refusal, and the state is used up", async () => {
      const started = await start();
      const back = new URL(CALLBACK);
      back.search = new URLSearchParams({
        error: 'access_denied',
        error_description: 'the person said no',
        state: started.location.searchParams.get('state')!,
        iss: idp.issuer,
      }).toString();
      expectPage(
        await callback(back, started.cookie),
        400,
        /the identity provider did not sign you in \(access_denied\)/,
      );
      expectPage(await callback(back, started.cookie), 400, /already completed/, 'kept');
    });

    it('refuses an answer without `iss` from a provider that announces it, or naming another issuer (RFC 9207)', async () => {
      const before = await snapshot();
      // node-oidc-provider announces authorization_response_iss_parameter_supported and sends `iss`.
      let started = await start();
      const stripped = await atProvider(started, 'dana@acme.test');
      expect(stripped.searchParams.get('iss')).toBe(idp.issuer);
      stripped.searchParams.delete('iss');
      expectPage(
        await callback(stripped, started.cookie),
        400,
        /answer failed a check \(response parameter "iss" \(issuer\) missing\)/,
      );
      started = await start();
      const mixedUp = await atProvider(started, 'dana@acme.test');
      mixedUp.searchParams.set('iss', 'https://login.other.example');
      expectPage(
        await callback(mixedUp, started.cookie),
        400,
        /answer failed a check \(unexpected "iss" \(issuer\) response parameter value\)/,
      );
      expect(await snapshot()).toEqual(before);
    });

    it('answers a request without code and state with 401 and the challenge, and an incomplete one with 400', async () => {
      const bare = await t.http().get('/v1/console/sso/callback');
      expectPage(bare, 401, /where your identity provider sends you back/, 'kept');
      expect(bare.headers['www-authenticate']).toBe('SignInLink realm="gatehouse"');
      for (const query of ['code=abc', 'state=abc', 'state=a&state=b&code=c', 'state=&code=c']) {
        expectPage(await t.http().get(`/v1/console/sso/callback?${query}`), 400, /answer is incomplete/, 'kept');
      }
    });

    it('refuses a person who is no member when the issuer adds none: a "no access" page, nothing created', async () => {
      const before = await snapshot();
      expectPage(
        await signInAs('newcomer@acme.test'),
        403,
        /newcomer@acme\.test has no access to the console of sso-acme: ask one of its administrators to add you/,
      );
      // A user of another organization is not made a member here either.
      expectPage(await signInAs('olga@acme.test'), 403, /olga@acme\.test has no access/);
      // The address as the provider sent it, never capitalised nor lower-cased by the page.
      const page = await signInAs('Newcomer.Two@acme.test');
      expectPage(page, 403, /has no access/);
      expect(page.text).toContain('role="alert">Newcomer.Two@acme.test has no access to the console of sso-acme');
      const lower = await signInAs('newcomer.three@acme.test');
      expect(lower.text).toContain('role="alert">newcomer.three@acme.test has no access');
      expect(await snapshot()).toEqual(before);
      expect(await t.get(IdentityService).userIdByEmail('newcomer@acme.test')).toBeNull();
    });

    it('adds a person with the just-in-time role (user and membership), audited member.added with reason sso', async () => {
      await trust({ emailDomains: ['acme.test'], jitRole: 'viewer' });
      const users = await count('users');
      const code = linkCode(await signInAs('Newcomer@acme.test'));
      const session = await trade(code).expect(200);
      expect(session.body).toMatchObject({ email: 'newcomer@acme.test', role: 'viewer' });
      expect(await count('users')).toBe(users + 1);
      const userId = session.body.user_id as string;
      const events = await t.get(AuditService).list(member.organizationId, 3);
      expect(events.map((event) => [event.action, event.reason, event.targetId, event.actorUserId])).toEqual([
        ['console.signed_in', `sso:${entry.id}`, userId, userId],
        ['member.added', 'sso', userId, null],
        ['trusted_issuer.added', 'people', entry.id, null],
      ]);
      // An existing user of another organization joins this one with the role; the next sign-in adds nothing.
      linkCode(await signInAs('olga@acme.test'));
      const memberships = await count('memberships');
      linkCode(await signInAs('newcomer@acme.test'));
      expect(await count('memberships')).toBe(memberships);
    });

    it('keeps a removed member out, just-in-time role or not: an "access removed" page, nothing added, until an admin adds them again', async () => {
      await trust({ emailDomains: ['acme.test'], jitRole: 'member' });
      // An admin removed (by another: the last admin is never removed) stays out too.
      await t.user({ org: ORG, email: 'ada@acme.test', role: 'admin' });
      const leaving = await t.user({ org: ORG, email: 'leo@acme.test', role: 'admin' });
      linkCode(await signInAs('leo@acme.test'));
      const cli = (...argv: string[]) => runTestCli(argv, t.env);
      expect(await cli('remove-member', '--org', ORG, '--email', 'leo@acme.test')).toMatchObject({ exitCode: 0 });

      const removed =
        /leo@acme\.test's access to the console of sso-acme was removed: ask one of its administrators if you need it again/;
      let before = await snapshot();
      expectPage(await signInAs('Leo@acme.test'), 403, removed);
      expect(await snapshot()).toEqual(before);
      // Without a just-in-time role: the same page (not "no access"), nothing written either.
      await trust({});
      before = await snapshot();
      expectPage(await signInAs('leo@acme.test'), 403, removed);
      expect(await snapshot()).toEqual(before);
      await trust({ emailDomains: ['acme.test'], jitRole: 'member' });
      expect(await t.get(IdentityService).access(leaving.organizationId, leaving.userId)).toBeNull();
      const memberEvents = (await t.get(AuditService).list(leaving.organizationId, 50)).filter(
        (event) => event.targetId === leaving.userId && event.action.startsWith('member.'),
      );
      expect(memberEvents.map((event) => event.action)).toEqual(['member.removed']);

      // An admin adds them again (set-role, or bootstrap): single sign-on lets them in with that role.
      expect(await cli('set-role', '--org', ORG, '--email', 'leo@acme.test', '--role', 'viewer')).toMatchObject({
        exitCode: 0,
      });
      const session = await trade(linkCode(await signInAs('leo@acme.test'))).expect(200);
      expect(session.body).toMatchObject({ email: 'leo@acme.test', role: 'viewer' });
    });

    it('adds nobody through an entry with a just-in-time role and no e-mail domain (made before the rule): "no access", another organization\'s admin included', async () => {
      await trust({ emailDomains: ['acme.test'], jitRole: 'admin' });
      // As a database from before the rule holds it: add refuses a just-in-time role without domains now.
      await t.get(DataSource).query(`UPDATE trusted_issuers SET email_domains = '[]' WHERE id = '${entry.id}'`);
      // An admin of another organization: this issuer's word does not make her an admin here.
      await t.user({ org: 'sso-elsewhere', email: 'ines@acme.test', role: 'admin' });
      const before = await snapshot();
      expectPage(await signInAs('ines@acme.test'), 403, /ines@acme\.test has no access to the console of sso-acme/);
      expectPage(await signInAs('newcomer-2@acme.test'), 403, /newcomer-2@acme\.test has no access/);
      expect(await snapshot()).toEqual(before);
      expect(await t.get(IdentityService).userIdByEmail('newcomer-2@acme.test')).toBeNull();
      // Its members still sign in.
      linkCode(await signInAs('dana@acme.test'));
    });

    it('refuses an e-mail address outside the allowed domains, with or without a just-in-time role', async () => {
      await trust({ emailDomains: ['acme.test'], jitRole: 'member' });
      const before = await snapshot();
      expectPage(
        await signInAs('eve@evil.test'),
        403,
        /eve@evil\.test is not in an e-mail domain this organization accepts/,
      );
      expectPage(await signInAs('eve@sub.acme.test'), 403, /not in an e-mail domain/);
      expect(await snapshot()).toEqual(before);
      expect(await t.get(IdentityService).userIdByEmail('eve@evil.test')).toBeNull();
      linkCode(await signInAs('dana@acme.test'));
    });

    it('refuses an e-mail address the provider has not verified, and an ID token without one', async () => {
      await trust({ emailDomains: ['acme.test'], jitRole: 'member' });
      const before = await snapshot();
      tamper = (claims) => ({ ...claims, email_verified: false });
      expectPage(await signInAs('unverified@acme.test'), 403, /has not verified your e-mail address/);
      tamper = ({ email: _email, ...claims }) => claims;
      expectPage(await signInAs('dana@acme.test'), 403, /did not tell Gatehouse your e-mail address/);
      expect(await snapshot()).toEqual(before);
    });

    it('refuses an ID token without the nonce, with another nonce, or issued more than 5 minutes ago', async () => {
      const before = await snapshot();
      tamper = ({ nonce: _nonce, ...claims }) => claims;
      expectPage(
        await signInAs('dana@acme.test'),
        400,
        /answer failed a check \(JWT "nonce" \(nonce\) claim missing\)/,
      );
      tamper = (claims) => ({ ...claims, nonce: randomBytes(16).toString('base64url') });
      expectPage(await signInAs('dana@acme.test'), 400, /"nonce" claim value/);
      const now = Math.floor(Date.now() / 1000);
      tamper = (claims) => ({ ...claims, iat: now - 400, exp: now + 600 });
      expectPage(await signInAs('dana@acme.test'), 400, /ID token was refused \(issued too long ago\)/);
      tamper = (claims) => ({ ...claims, aud: 'another-client' });
      expectPage(await signInAs('dana@acme.test'), 400, /answer failed a check/);
      expect(await snapshot()).toEqual(before);
    });

    it('authenticates at the token endpoint as the issuer is configured: Basic, or the secret in the form', async () => {
      linkCode(await signInAs('dana@acme.test'));
      expect(tokenRequest!.headers.authorization).toMatch(/^Basic /);
      expect(new URLSearchParams(tokenRequest!.body).has('client_secret')).toBe(false);
      expect(new URLSearchParams(tokenRequest!.body).get('code_verifier')).toMatch(/^[A-Za-z0-9_-]{43}$/);
      // The token request names the redirect URI of the authorization request (RFC 6749 section 4.1.3).
      expect(new URLSearchParams(tokenRequest!.body).get('redirect_uri')).toBe(CALLBACK);

      await trust({ tokenEndpointAuth: 'client_secret_post' });
      linkCode(await signInAs('dana@acme.test'));
      expect(tokenRequest!.headers.authorization).toBeUndefined();
      expect(new URLSearchParams(tokenRequest!.body).get('client_id')).toBe(idp.people.clientId);
      expect(new URLSearchParams(tokenRequest!.body).get('client_secret')).toBe(idp.people.clientSecret);

      // A secret the provider does not know: its refusal is shown, nothing is created.
      const issuers = t.get(TrustedIssuersService);
      await issuers.remove(entry.id);
      entry = await issuers.add({
        organization: ORG,
        issuer: idp.issuer,
        kind: 'people',
        clientId: idp.people.clientId,
        clientSecret: 'not-the-secret',
        emailDomains: [],
      });
      const before = await snapshot();
      expectPage(await signInAs('dana@acme.test'), 400, /refused the sign-in code \(invalid_client; a code works once/);
      expect(await snapshot()).toEqual(before);
      await trust({});
    });

    it('answers a 503 page within the time-out when the provider does not answer, creating nothing', async () => {
      const started = await start();
      const back = await atProvider(started, 'dana@acme.test');
      const before = await snapshot();
      await idp.setUnresponsive(true);
      try {
        const began = Date.now();
        const response = await callback(back, started.cookie);
        const elapsed = Date.now() - began;
        expectPage(
          response,
          503,
          /the identity provider cannot be reached \(http:\/\/127\.0\.0\.1:\d+: no answer within 3 s\)/,
        );
        expect(elapsed).toBeGreaterThanOrEqual(DEFAULT_SSO_SETTINGS.httpTimeoutMs - 100);
        expect(elapsed).toBeLessThan(DEFAULT_SSO_SETTINGS.httpTimeoutMs + 2000);
      } finally {
        await idp.setUnresponsive(false);
      }
      expect(await snapshot()).toEqual(before);
    });
  });

  it('a provider that is down: 503 at the start (nothing discovered yet), then 429 past the starts per minute', async () => {
    const third = await createTestApp({
      database: t.database,
      env: { PUBLIC_BASE_URL: BASE },
      override: (builder) =>
        builder.overrideProvider(SSO_SETTINGS).useValue({ ...DEFAULT_SSO_SETTINGS, startsPerMinute: 2 }),
    });
    try {
      await idp.stop();
      const down = await third.http().get('/v1/console/sso').query({ org: ORG });
      expect({ status: down.status, code: down.body.code }).toEqual({ status: 503, code: 'UNAVAILABLE' });
      expect(down.body.message).toMatch(
        /^the identity provider cannot be reached \(cannot fetch http:\/\/127\.0\.0\.1:\d+/,
      );
      expect(down.headers.location).toBeUndefined();

      await idp.restart();
      await start(third);
      await start(third);
      const limited = await third.http().get('/v1/console/sso').query({ org: ORG });
      expect({ status: limited.status, body: limited.body }).toEqual({
        status: 429,
        body: { code: 'RESOURCE_EXHAUSTED', message: 'too many requests', reason: 'too_many_sso_starts' },
      });
      expect(Number(limited.headers['retry-after'])).toBeGreaterThan(0);
    } finally {
      await third.close();
    }
  });
});
