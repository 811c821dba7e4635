import type { CustomFetch } from 'openid-client';
import type { Response } from 'supertest';
import { defaultSsoFetch, SSO_FETCH } from '../../src/console-sign-in/sso/sso-client';
import { SsoIssuerMetadata } from '../../src/console-sign-in/sso/sso-issuer-metadata';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { IdentityProvider } from '../support/identity-provider';
import { signInRows } from '../support/sign-in-rows';
import { createTestApp, DATABASE_KIND, TestApp } from '../support/test-app';

/**
 * The mix-up attack on console single sign-on (RFC 9700 section 4.4) and its defence, a redirect URI per organization
 * (section 4.4.2, docs/adr/0042-sso-redirect-uri-per-organization.md): two organizations, each with its own
 * node-oidc-provider, both playing providers without RFC 9207's `iss` (Entra ID sends none), so that only the redirect
 * URI tells Gatehouse whose answer a callback brings. A code must never reach another organization's token endpoint.
 */
describe(`console single sign-on: one redirect URI per organization (${DATABASE_KIND})`, () => {
  const BASE = 'https://gatehouse.example.com';
  const HONEST = 'sso-honest';
  // A name that must be URL-encoded in its redirect URI.
  const EVIL = 'Evil Corp/EU';
  const callbackOf = (org: string) => `${BASE}/v1/console/sso/callback/${encodeURIComponent(org)}`;
  const OLD_CALLBACK = `${BASE}/v1/console/sso/callback`;
  const CLEARED = ['gatehouse_sso=; Path=/v1/console/sso/callback; Max-Age=0; HttpOnly; SameSite=Lax; Secure'];
  let honest: IdentityProvider;
  let evil: IdentityProvider;
  let t: TestApp;

  /** Every request Gatehouse sent to a token endpoint: the provider's, and the code it carried. */
  const tokenRequests: Array<{ to: 'honest' | 'evil'; code: string | null }> = [];
  const providerFetch: CustomFetch = async (url, options) => {
    for (const [to, provider] of [
      ['honest', honest],
      ['evil', evil],
    ] as const) {
      if (url === provider.tokenEndpoint) {
        tokenRequests.push({ to, code: new URLSearchParams(options.body as URLSearchParams).get('code') });
      }
    }
    return defaultSsoFetch(url, options);
  };

  beforeAll(async () => {
    // Honest's operator kept the old shared redirect URI registered besides the new one (during an upgrade).
    honest = await IdentityProvider.start({ redirectUris: [callbackOf(HONEST), OLD_CALLBACK] });
    evil = await IdentityProvider.start({ redirectUris: [callbackOf(EVIL)] });
    t = await createTestApp({
      env: { PUBLIC_BASE_URL: BASE },
      override: (builder) => builder.overrideProvider(SSO_FETCH).useValue(providerFetch),
    });
    // Providers that do not announce RFC 9207's parameter: the honest one as Entra ID (which does not), the evil one
    // because its operator chooses so. openid-client then does not require `iss`, and the answers below carry none.
    const metadata = t.get(SsoIssuerMetadata);
    const discovered = metadata.of.bind(metadata);
    metadata.of = async (issuer: string) => ({ ...(await discovered(issuer)), issParameterSupported: false });
    await t.user({ org: HONEST, email: 'dana@acme.test', role: 'admin' });
    await t.user({ org: EVIL, email: 'mallory@evil.test', role: 'admin' });
    const issuers = t.get(TrustedIssuersService);
    for (const [organization, provider] of [
      [HONEST, honest],
      [EVIL, evil],
    ] as const) {
      await issuers.add({
        organization,
        issuer: provider.issuer,
        kind: 'people',
        clientId: provider.people.clientId,
        clientSecret: provider.people.clientSecret,
        emailDomains: [],
      });
    }
  });
  afterAll(async () => {
    await IdentityProvider.stopAll();
    await t?.close();
  });
  beforeEach(() => {
    tokenRequests.length = 0;
  });

  interface Started {
    request: URLSearchParams;
    cookie: string;
  }

  async function start(org: string): Promise<Started> {
    const response = await t.http().get('/v1/console/sso').query({ org });
    expect(response.status).toBe(302);
    const cookie = (response.headers['set-cookie'] as unknown as string[])[0].split(';')[0];
    return { request: new URL(response.headers.location).searchParams, cookie };
  }

  /** The person signs in at `provider` for the request `started`: the URL it sends the browser back to, no `iss`. */
  async function answer(provider: IdentityProvider, started: Started, login: string): Promise<URL> {
    const back = await provider.authorize({
      login,
      redirectUri: started.request.get('redirect_uri')!,
      state: started.request.get('state')!,
      nonce: started.request.get('nonce')!,
      codeChallenge: started.request.get('code_challenge')!,
    });
    back.searchParams.delete('iss');
    return back;
  }

  const arrive = (url: URL, cookie: string) => t.http().get(`${url.pathname}${url.search}`).set('Cookie', cookie);

  const snapshot = () => signInRows(t);

  /** A 400 page; the binding cookie removed, or left alone (`kept`) when the sign-in was not used up. */
  function expectRefusal(response: Response, text: RegExp, binding: 'cleared' | 'kept' = 'cleared'): void {
    const cookie = binding === 'cleared' ? CLEARED : undefined;
    expect({
      status: response.status,
      type: response.headers['content-type'],
      cookie: response.headers['set-cookie'],
    }).toEqual({ status: 400, type: 'text/html; charset=utf-8', cookie });
    expect(/<p>(.*)<\/p>/.exec(response.text)?.[1]).toMatch(text);
  }

  it("sends each organization's own redirect URI, its name URL-encoded, and signs in through it", async () => {
    const started = await start(EVIL);
    expect(started.request.get('redirect_uri')).toBe(`${BASE}/v1/console/sso/callback/Evil%20Corp%2FEU`);
    expect((await start(HONEST)).request.get('redirect_uri')).toBe(`${BASE}/v1/console/sso/callback/sso-honest`);
    const back = await answer(evil, started, 'mallory@evil.test');
    expect(back.pathname).toBe('/v1/console/sso/callback/Evil%20Corp%2FEU');
    const response = await arrive(back, started.cookie);
    expect(response.status).toBe(302);
    expect(response.headers['set-cookie']).toEqual(CLEARED);
    // The token request carried the same redirect URI (node-oidc-provider refuses the code otherwise).
    expect(tokenRequests).toEqual([{ to: 'evil', code: back.searchParams.get('code') }]);
  });

  it("refuses a mix-up: the honest provider's code for another organization's sign-in never reaches the evil one", async () => {
    // (1) The attacker, a member of evil, starts a sign-in at honest in their own browser and keeps its request.
    const attacker = await start(HONEST);
    // (2) The victim's browser is made to start a sign-in at evil (a link); evil's authorization endpoint sends it on
    // to the honest provider with Gatehouse's client id there, the attacker's PKCE challenge and nonce, the victim's
    // state, and a redirect URI the honest provider accepts: honest's own.
    const victim = await start(EVIL);
    const back = await honest.authorize({
      login: 'dana@acme.test',
      redirectUri: attacker.request.get('redirect_uri')!,
      state: victim.request.get('state')!,
      nonce: attacker.request.get('nonce')!,
      codeChallenge: attacker.request.get('code_challenge')!,
    });
    back.searchParams.delete('iss');
    expect(back.pathname).toBe('/v1/console/sso/callback/sso-honest');
    const before = await snapshot();
    // (3) The victim's browser brings the honest code with its own state, a sign-in started for evil: refused before
    // any token request, so evil's token endpoint never sees the code (nor does honest's), and (4) the attacker has
    // nothing to complete their own sign-in with.
    const refused = await arrive(back, victim.cookie);
    expect(tokenRequests).toEqual([]);
    expectRefusal(refused, /this sign-in was started for another organization/i);
    expect(await snapshot()).toEqual(before);
    // The victim's sign-in is used up (its state has been through another provider), and stays so.
    expectRefusal(await arrive(back, victim.cookie), /already completed/i, 'kept');
    expect(tokenRequests).toEqual([]);
  });

  it('refuses the same mix-up through the old shared redirect URI, which the honest provider still accepts', async () => {
    const attacker = await start(HONEST);
    const victim = await start(EVIL);
    // Evil forwards the victim with the old redirect URI instead: where the shared callback used to redeem the code
    // at the token endpoint of the sign-in's organization, evil's.
    const back = await honest.authorize({
      login: 'dana@acme.test',
      redirectUri: OLD_CALLBACK,
      state: victim.request.get('state')!,
      nonce: attacker.request.get('nonce')!,
      codeChallenge: attacker.request.get('code_challenge')!,
    });
    back.searchParams.delete('iss');
    expect(back.pathname).toBe('/v1/console/sso/callback');
    const before = await snapshot();
    const refused = await arrive(back, victim.cookie);
    expect(tokenRequests).toEqual([]);
    expectRefusal(refused, /no longer completes a sign-in/i, 'kept');
    expect(await snapshot()).toEqual(before);
  });

  it("refuses an answer of one organization's provider at another's redirect URI, sending the code nowhere", async () => {
    const started = await start(EVIL);
    const back = await answer(evil, started, 'mallory@evil.test');
    const elsewhere = new URL(`${callbackOf(HONEST)}${back.search}`);
    const before = await snapshot();
    expectRefusal(await arrive(elsewhere, started.cookie), /started for another organization/i);
    expect(tokenRequests).toEqual([]);
    expect(await snapshot()).toEqual(before);
    // The state is used up: the answer at its own redirect URI is refused too.
    expectRefusal(await arrive(back, started.cookie), /already completed/i, 'kept');
    expect(tokenRequests).toEqual([]);

    // The other way round, and an organization that does not exist.
    const honestStart = await start(HONEST);
    const honestBack = await answer(honest, honestStart, 'dana@acme.test');
    for (const path of [callbackOf(EVIL), callbackOf('sso-nobody'), callbackOf('SSO-HONEST')]) {
      const fresh = await start(HONEST);
      const url = new URL(`${path}${honestBack.search}`);
      url.searchParams.set('state', fresh.request.get('state')!);
      expectRefusal(await arrive(url, fresh.cookie), /started for another organization/i);
    }
    expect(tokenRequests).toEqual([]);
  });

  it('answers the old shared redirect URI with a page naming the new one, redeeming nothing and keeping the sign-in', async () => {
    const started = await start(HONEST);
    const back = await answer(honest, started, 'dana@acme.test');
    const old = new URL(`${BASE}/v1/console/sso/callback${back.search}`);
    const before = await snapshot();
    const refused = await arrive(old, started.cookie);
    expectRefusal(
      refused,
      new RegExp(
        '^This address no longer completes a sign-in: an administrator registers ' +
          'https://gatehouse\\.example\\.com/v1/console/sso/callback/&lt;organization&gt; \\(with the organization&#39;s ' +
          'name\\) as Gatehouse&#39;s redirect URI at the identity provider, then start again from the sign-in page\\.$',
      ),
      'kept',
    );
    expect(refused.headers['cache-control']).toBe('no-store');
    expectRefusal(await t.http().get('/v1/console/sso/callback?code=abc'), /no longer completes a sign-in/, 'kept');
    // Without any answer, the 401 of the callback without its credential, as at the organization's URI.
    const bare = await t.http().get('/v1/console/sso/callback');
    expect({ status: bare.status, challenge: bare.headers['www-authenticate'] }).toEqual({
      status: 401,
      challenge: 'SignInLink realm="gatehouse"',
    });
    expect(tokenRequests).toEqual([]);
    expect(await snapshot()).toEqual(before);
    // The sign-in was left alone: at its own redirect URI it completes.
    expect((await arrive(back, started.cookie)).status).toBe(302);
    expect(tokenRequests.map((request) => request.to)).toEqual(['honest']);
  });
});
