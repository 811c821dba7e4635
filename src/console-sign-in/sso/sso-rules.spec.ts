import type { IssuerMetadata } from '../../federation/issuer-discovery';
import { serverMetadata } from './sso-client';
import { ssoPage } from './sso-page.filter';
import { bindingCookie, clearedBindingCookie, cookieValue, isStale, MAX_ID_TOKEN_AGE_SECONDS } from './sso-rules';
import { justInTimeRole, personEmail } from '../../federation/people';

describe('console single sign-on rules', () => {
  describe("the person's e-mail address", () => {
    it('is the email claim, lower-cased, when the issuer verified it or does not say', () => {
      expect(personEmail({ email: 'Dana@Acme.Test', email_verified: true }, [])).toEqual({
        ok: true,
        email: 'dana@acme.test',
      });
      // Entra ID sends no email_verified: the claim's absence is not a refusal.
      expect(personEmail({ email: 'dana@acme.test' }, [])).toEqual({ ok: true, email: 'dana@acme.test' });
    });

    it('is required, and must look like an address', () => {
      for (const claims of [{}, { email: '' }, { email: 42 }, { email: 'dana' }, { email: `${'a'.repeat(320)}@x.y` }]) {
        expect(personEmail(claims, [])).toEqual({ ok: false, refusal: 'no_email' });
      }
    });

    it('is refused when email_verified is anything but true', () => {
      for (const verified of [false, 'true', 'yes', 1, null]) {
        expect(personEmail({ email: 'dana@acme.test', email_verified: verified }, [])).toEqual({
          ok: false,
          refusal: 'email_not_verified',
        });
      }
    });

    it('must be in one of the configured domains, exactly (no subdomain), whatever its case', () => {
      const domains = ['acme.test', 'acme.example'];
      expect(personEmail({ email: 'dana@ACME.example' }, domains)).toEqual({ ok: true, email: 'dana@acme.example' });
      for (const email of ['dana@evil.test', 'dana@eu.acme.test', 'dana@acme.test.evil', 'acme.test@evil.test']) {
        expect(personEmail({ email }, domains)).toEqual({ ok: false, refusal: 'email_domain_not_allowed' });
      }
    });
  });

  it('refuses an ID token issued more than 5 minutes ago', () => {
    const now = 1_800_000_000;
    expect(MAX_ID_TOKEN_AGE_SECONDS).toBe(300);
    expect(isStale(now, now)).toBe(false);
    expect(isStale(now - 300, now)).toBe(false);
    expect(isStale(now - 301, now)).toBe(true);
  });

  describe('just-in-time membership', () => {
    it("is the issuer's role only with e-mail domains: an entry with a role and no domain adds nobody", () => {
      expect(justInTimeRole({ jitRole: 'member', emailDomains: ['acme.test'] })).toBe('member');
      expect(justInTimeRole({ jitRole: 'admin', emailDomains: [] })).toBeNull();
      expect(justInTimeRole({ jitRole: null, emailDomains: ['acme.test'] })).toBeNull();
    });
  });

  describe('the binding cookie', () => {
    it('is HttpOnly and SameSite=Lax, for the callback only, Secure on https', () => {
      expect(bindingCookie('abc', { path: '/v1/console/sso/callback', secure: true, maxAgeSeconds: 600 })).toBe(
        'gatehouse_sso=abc; Path=/v1/console/sso/callback; Max-Age=600; HttpOnly; SameSite=Lax; Secure',
      );
      expect(clearedBindingCookie({ path: '/gh/v1/console/sso/callback', secure: false })).toBe(
        'gatehouse_sso=; Path=/gh/v1/console/sso/callback; Max-Age=0; HttpOnly; SameSite=Lax',
      );
    });

    it('is read from the Cookie header by its exact name', () => {
      expect(cookieValue('a=1; gatehouse_sso=xyz; b=2', 'gatehouse_sso')).toBe('xyz');
      expect(cookieValue('gatehouse_sso=first; gatehouse_sso=second', 'gatehouse_sso')).toBe('first');
      expect(cookieValue('my_gatehouse_sso=x', 'gatehouse_sso')).toBeUndefined();
      expect(cookieValue('gatehouse_sso=', 'gatehouse_sso')).toBeUndefined();
      expect(cookieValue(undefined, 'gatehouse_sso')).toBeUndefined();
    });
  });

  describe("openid-client's view of the issuer", () => {
    const metadata: IssuerMetadata = {
      issuer: 'https://login.example.com',
      jwksUri: 'https://login.example.com/jwks',
      authorizationEndpoint: 'https://login.example.com/auth',
      tokenEndpoint: 'https://login.example.com/token',
      tokenEndpointAuthMethods: ['client_secret_basic', 'client_secret_post'],
      idTokenSigningAlgs: ['HS256', 'RS256', 'none', 'ES256', 'RS512'],
      issParameterSupported: true,
      documentUrl: 'https://login.example.com/.well-known/openid-configuration',
    };

    it('announces only the ID token algorithms Gatehouse accepts, all of them when the issuer does not say', () => {
      expect(serverMetadata(metadata, true)).toEqual({
        issuer: 'https://login.example.com',
        authorization_endpoint: 'https://login.example.com/auth',
        token_endpoint: 'https://login.example.com/token',
        jwks_uri: 'https://login.example.com/jwks',
        token_endpoint_auth_methods_supported: ['client_secret_basic', 'client_secret_post'],
        id_token_signing_alg_values_supported: ['RS256', 'ES256'],
        authorization_response_iss_parameter_supported: true,
      });
      expect(
        serverMetadata({ ...metadata, idTokenSigningAlgs: undefined }, true).id_token_signing_alg_values_supported,
      ).toEqual(['RS256', 'PS256', 'ES256', 'EdDSA']);
    });

    it('requires `iss` as the issuer announces it, and always for an answer at the shared redirect URI (RFC 9207)', () => {
      const plain = { ...metadata, issParameterSupported: false };
      expect(serverMetadata(plain, true).authorization_response_iss_parameter_supported).toBe(false);
      expect(serverMetadata(plain, true, true).authorization_response_iss_parameter_supported).toBe(true);
      expect(serverMetadata(metadata, true, false).authorization_response_iss_parameter_supported).toBe(true);
    });

    it('refuses endpoints that are not https (http on a loopback host outside production only)', () => {
      const local = { ...metadata, tokenEndpoint: 'http://127.0.0.1:8080/token' };
      const allowed = ['http://127.0.0.1:8080'];
      expect(serverMetadata(local, false, false, allowed).token_endpoint).toBe('http://127.0.0.1:8080/token');
      expect(() => serverMetadata(local, true, false, allowed)).toThrow(/http:\/\/127\.0\.0\.1:8080\/token is http/);
      expect(() =>
        serverMetadata({ ...metadata, authorizationEndpoint: 'http://login.example.com/auth' }, false),
      ).toThrow(/not https/);
      expect(() => serverMetadata({ ...metadata, tokenEndpoint: undefined }, false)).toThrow(
        /no authorization_endpoint/,
      );
    });

    it("refuses endpoints on another origin than the issuer's, unless the entry allows it", () => {
      const moved = { ...metadata, tokenEndpoint: 'https://oauth2.example.net/token' };
      expect(() => serverMetadata(moved, true)).toThrow(
        "the endpoint https://oauth2.example.net/token is on https://oauth2.example.net, not the issuer's origin " +
          'https://login.example.com',
      );
      expect(serverMetadata(moved, true, false, ['https://oauth2.example.net']).token_endpoint).toBe(
        'https://oauth2.example.net/token',
      );
    });
  });

  it("writes the refusal page with everything escaped, no script and no inline style, in the console's styles", () => {
    const page = ssoPage(
      'No access to the console',
      '<b>eve</b>@acme.test has "no" access',
      'https://gh.test/console/sign-in',
      ['/console/assets/index-C0ffee.css'],
    );
    expect(page).toContain('<h1>No access to the console</h1>');
    expect(page).toContain(
      '<p class="message message-error" role="alert">&lt;b&gt;eve&lt;/b&gt;@acme.test has &quot;no&quot; access.</p>',
    );
    expect(page).toContain('<a class="button button-primary" href="https://gh.test/console/sign-in">');
    expect(page).toContain('<link rel="stylesheet" href="/console/assets/index-C0ffee.css">');
    expect(page).not.toMatch(/<script|<style|style=/);
  });

  it('keeps an e-mail address at the start of the message as it came, and makes other messages sentences', () => {
    const sentenceOf = (message: string) =>
      /role="alert">([^<]*)<\/p>/.exec(ssoPage('t', message, 'https://gh.test'))?.[1];
    expect(sentenceOf('Bob@acme.test has no access to the console of acme')).toBe(
      'Bob@acme.test has no access to the console of acme.',
    );
    expect(sentenceOf('bob@acme.test has no access')).toBe('bob@acme.test has no access.');
    expect(sentenceOf('this sign-in is unknown: start again')).toBe('This sign-in is unknown: start again.');
    expect(sentenceOf('Already one.')).toBe('Already one.');
  });
});
