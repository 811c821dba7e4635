import type { CustomFetch } from 'openid-client';
import type { Response } from 'supertest';
import { SSO_FETCH, ssoFetch } from '../../src/console-sign-in/sso/sso-client';
import { SsoIssuerMetadata } from '../../src/console-sign-in/sso/sso-issuer-metadata';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { IdentityProvider } from '../support/identity-provider';
import { signInRows } from '../support/row-counts';
import { createTestApp, DATABASE_KIND, TestApp } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/**
 * The mix-up attack on console single sign-on (RFC 9700 section 4.4) and its two defences (section 4.4.2,
 * docs/adr/0042-sso-redirect-uri-per-organization.md): RFC 9207's `iss` at the shared redirect URI for a provider that
 * announces it, a redirect URI per organization for one that does not. Four organizations, each with its own
 * node-oidc-provider: an honest and a hostile one of each kind. node-oidc-provider announces and sends `iss`; the
 * providers "without" it play Entra ID: Gatehouse's view of their discovery document says they do not announce it, and
 * their answers carry none. A code must never reach another organization's token endpoint.
 */
describe(`console single sign-on: the mix-up attack and its two defences (${DATABASE_KIND})`, () => {
  const BASE = 'https://gatehouse.example.com';
  const SHARED = `${BASE}/v1/console/sso/callback`;
  const callbackOf = (org: string) => `${SHARED}/${encodeURIComponent(org)}`;
  const CLEARED = ['gatehouse_sso=; Path=/v1/console; Max-Age=0; HttpOnly; SameSite=Lax; Secure'];

  type Name = 'honestIss' | 'honestPlain' | 'evilIss' | 'evilPlain';
  interface Party {
    org: string;
    login: string;
    /** Whether the provider announces (and sends) RFC 9207's `iss`. */
    iss: boolean;
    provider: IdentityProvider;
  }
  const parties = {} as Record<Name, Party>;
  const setUp: Array<[Name, string, string, boolean]> = [
    ['honestIss', 'sso-honest', 'dana@acme.test', true],
    // A name that must be URL-encoded in its redirect URI.
    ['honestPlain', 'Honest Plain/EU', 'erin@plain.test', false],
    ['evilIss', 'sso-evil', 'mallory@evil.test', true],
    ['evilPlain', 'Evil Corp/EU', 'trudy@evil.test', false],
  ];
  let t: TestApp;

  /** Every request Gatehouse sent to a token endpoint: the provider's, and the code it carried. */
  const tokenRequests: Array<{ to: Name; code: string | null }> = [];
  const providerFetch: CustomFetch = async (url, options) => {
    for (const [name, party] of Object.entries(parties)) {
      if (url === party.provider.tokenEndpoint) {
        tokenRequests.push({
          to: name as Name,
          code: new URLSearchParams(options.body as URLSearchParams).get('code'),
        });
      }
    }
    return ssoFetch(true)(url, options);
  };

  beforeAll(async () => {
    for (const [name, org, login, iss] of setUp) {
      // The honest providers accept both of Gatehouse's redirect URIs (an operator may register both, or the old one
      // stayed), so that a hostile provider can forward a victim with either; the hostile ones register theirs.
      const redirectUris = name.startsWith('honest') ? [SHARED, callbackOf(org)] : [iss ? SHARED : callbackOf(org)];
      parties[name] = { org, login, iss, provider: await IdentityProvider.start({ redirectUris }) };
    }
    t = await createTestApp({
      env: { PUBLIC_BASE_URL: BASE },
      override: (builder) => builder.overrideProvider(SSO_FETCH).useValue(providerFetch),
    });
    const plain = new Set(Object.values(parties).flatMap((party) => (party.iss ? [] : [party.provider.issuer])));
    const metadata = t.get(SsoIssuerMetadata);
    const discovered = metadata.of.bind(metadata);
    metadata.of = async (entry) => {
      const found = await discovered(entry);
      return plain.has(entry.issuer) ? { ...found, issParameterSupported: false } : found;
    };
    const issuers = t.get(TrustedIssuersService);
    for (const party of Object.values(parties)) {
      await t.user({ org: party.org, email: party.login, role: 'admin' });
      await issuers.add({
        organization: party.org,
        issuer: party.provider.issuer,
        kind: 'people',
        clientId: party.provider.people.clientId,
        clientSecret: party.provider.people.clientSecret,
        emailDomains: [],
      });
    }
  }, SET_UP_TIMEOUT_MS);
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

  /**
   * A person signs in at `party`'s provider for the request `started` (or `as` it, with its redirect URI, nonce and
   * PKCE challenge, and `started`'s state): the URL it sends the browser back to, without `iss` from a provider that
   * does not send it.
   */
  async function answer(party: Party, started: Started, as: { redirectUri?: string; request?: Started } = {}) {
    const request = (as.request ?? started).request;
    const back = await party.provider.authorize({
      login: party.login,
      redirectUri: as.redirectUri ?? request.get('redirect_uri')!,
      state: started.request.get('state')!,
      nonce: request.get('nonce')!,
      codeChallenge: request.get('code_challenge')!,
    });
    if (!party.iss) back.searchParams.delete('iss');
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
    expect(/<p class="message message-error" role="alert">(.*)<\/p>/.exec(response.text)?.[1]).toMatch(text);
  }

  const ANOTHER_ADDRESS =
    /^This answer came back to another address than the sign-in was started with: start again from the sign-in page\.$/;

  it('sends the shared redirect URI to a provider that announces `iss`, its own to one that does not, and signs in through each', async () => {
    const expected: Record<Name, string> = {
      honestIss: SHARED,
      honestPlain: `${SHARED}/Honest%20Plain%2FEU`,
      evilIss: SHARED,
      evilPlain: `${SHARED}/Evil%20Corp%2FEU`,
    };
    for (const [name, party] of Object.entries(parties) as Array<[Name, Party]>) {
      tokenRequests.length = 0;
      const started = await start(party.org);
      expect(started.request.get('redirect_uri')).toBe(expected[name]);
      const back = await answer(party, started);
      expect(back.href.split('?')[0]).toBe(expected[name]);
      expect(back.searchParams.has('iss')).toBe(party.iss);
      const response = await arrive(back, started.cookie);
      // Signed in: the binding kept for the link, which only this browser may trade.
      expect({ name, status: response.status, cookie: response.headers['set-cookie'] }).toEqual({
        name,
        status: 302,
        cookie: [`${started.cookie}; Path=/v1/console; Max-Age=600; HttpOnly; SameSite=Lax; Secure`],
      });
      // The token request carried the same redirect URI (node-oidc-provider refuses the code otherwise).
      expect(tokenRequests).toEqual([{ to: name, code: back.searchParams.get('code') }]);
    }
  });

  // Every variant: a hostile provider that announces `iss` or not, an honest provider that sends it or not, and the
  // victim forwarded with either redirect URI the honest provider accepts.
  const variants = (['evilIss', 'evilPlain'] as const).flatMap((evil) =>
    (['honestIss', 'honestPlain'] as const).flatMap((honest) =>
      (['shared', 'own'] as const).map((uri) => ({ evil, honest, uri })),
    ),
  );

  it.each(variants)(
    "refuses a mix-up before any token request: hostile $evil, honest $honest, the honest provider's $uri redirect URI",
    async ({ evil, honest, uri }) => {
      // (1) The attacker, a member of the hostile organization, starts a sign-in at the honest one in their own
      // browser and keeps its request (nonce, PKCE challenge).
      const attacker = await start(parties[honest].org);
      // (2) The victim's browser is made to start a sign-in at the hostile organization (a link); its provider sends
      // it on to the honest provider with Gatehouse's client id there, the attacker's PKCE challenge and nonce, the
      // victim's state, and a redirect URI the honest provider accepts.
      const victim = await start(parties[evil].org);
      const redirectUri = uri === 'shared' ? SHARED : callbackOf(parties[honest].org);
      const back = await answer(parties[honest], victim, { redirectUri, request: attacker });
      expect(back.href.split('?')[0]).toBe(redirectUri);
      const before = await snapshot();
      // (3) The victim's browser brings the honest code with its own state, a sign-in started at the hostile
      // provider: refused before any token request, so the hostile token endpoint never sees the code (nor does the
      // honest one), and (4) the attacker has nothing to complete their own sign-in with. Only a hostile provider
      // that announces `iss` gets the shared URI, where the honest answer's `iss` (or its absence) gives it away.
      const refused = await arrive(back, victim.cookie);
      expect(tokenRequests).toEqual([]);
      expectRefusal(
        refused,
        evil === 'evilIss' && uri === 'shared'
          ? parties[honest].iss
            ? /failed a check \(unexpected &quot;iss&quot; \(issuer\) response parameter value\)/
            : /failed a check \(response parameter &quot;iss&quot; \(issuer\) missing\)/
          : ANOTHER_ADDRESS,
      );
      expect(await snapshot()).toEqual(before);
      // The victim's sign-in is used up (its state has been through another provider), and stays so.
      expectRefusal(await arrive(back, victim.cookie), /already completed/i, 'kept');
      expect(tokenRequests).toEqual([]);
    },
  );

  it("refuses an answer at another redirect URI than its sign-in's, whichever way round, sending the code nowhere", async () => {
    const cases: Array<[Name, string]> = [
      // A provider that sends `iss`, answering at a per-organization URI: its own organization's, another's.
      ['honestIss', callbackOf('sso-honest')],
      ['honestIss', callbackOf('Evil Corp/EU')],
      // A provider without `iss` at the shared URI, at another organization's, one that does not exist, its own in
      // another case.
      ['honestPlain', SHARED],
      ['honestPlain', callbackOf('Evil Corp/EU')],
      ['honestPlain', callbackOf('sso-nobody')],
      ['honestPlain', callbackOf('HONEST PLAIN/EU')],
    ];
    for (const [name, elsewhere] of cases) {
      const started = await start(parties[name].org);
      const back = await answer(parties[name], started);
      const moved = new URL(`${elsewhere}${back.search}`);
      const before = await snapshot();
      expectRefusal(await arrive(moved, started.cookie), ANOTHER_ADDRESS);
      expect(await snapshot()).toEqual(before);
      // The state is used up: the answer at its own redirect URI is refused too.
      expectRefusal(await arrive(back, started.cookie), /already completed/i, 'kept');
    }
    // A provider's error at the wrong address is refused the same way.
    const started = await start(parties.honestPlain.org);
    const refusal = new URL(SHARED);
    refusal.search = new URLSearchParams({ error: 'access_denied', state: started.request.get('state')! }).toString();
    expectRefusal(await arrive(refusal, started.cookie), ANOTHER_ADDRESS);
    expect(tokenRequests).toEqual([]);
  });

  it('refuses a sign-in whose provider stopped announcing `iss` since its start, and one that started announcing it', async () => {
    // The issuer's document changed between start and callback (a refresh): the redirect URI the sign-in started
    // with is no longer the one it would get, so the answer is refused rather than checked by another rule.
    const metadata = t.get(SsoIssuerMetadata);
    const of = metadata.of;
    try {
      for (const name of ['honestIss', 'honestPlain'] as const) {
        const party = parties[name];
        const started = await start(party.org);
        const back = await answer(party, started);
        metadata.of = async (entry) => {
          const found = await of(entry);
          return entry.issuer === party.provider.issuer ? { ...found, issParameterSupported: !party.iss } : found;
        };
        expectRefusal(await arrive(back, started.cookie), ANOTHER_ADDRESS);
        metadata.of = of;
      }
    } finally {
      metadata.of = of;
    }
    expect(tokenRequests).toEqual([]);
  });

  it('answers the shared redirect URI without any answer with the 401 of the callback without its credential', async () => {
    const bare = await t.http().get('/v1/console/sso/callback');
    expect({ status: bare.status, challenge: bare.headers['www-authenticate'] }).toEqual({
      status: 401,
      challenge: 'SignInLink realm="gatehouse"',
    });
    expectRefusal(await t.http().get('/v1/console/sso/callback?code=abc'), /answer is incomplete/, 'kept');
    expect(tokenRequests).toEqual([]);
  });
});
