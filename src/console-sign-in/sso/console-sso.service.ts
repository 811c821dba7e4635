import { createHash, randomBytes } from 'node:crypto';
import { Inject, Injectable, Logger } from '@nestjs/common';
import { calculatePKCECodeChallenge, randomNonce, randomPKCECodeVerifier, randomState } from 'openid-client';
import type { RequestContext } from '../../audit/request-context';
import { clientNetwork } from '../../common/client-address';
import { AppError, ErrorCode, tooManyRequests } from '../../common/errors';
import { FAILURE_COUNTER, FailureCounter } from '../../common/failure-counter';
import { InjectConfig } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import { SubjectTokenVerifier } from '../../federation/subject-token-verifier';
import { peopleRedirectUri } from '../../federation/people-redirect-uri';
import type { TrustedIssuer } from '../../federation/trusted-issuer.entity';
import { TrustedIssuersService } from '../../federation/trusted-issuers.service';
import { IdentityService } from '../../identity/identity.service';
import { Metrics } from '../../metrics/metrics';
import { ConsoleSignInService, SIGN_IN_LINK_SECONDS } from '../console-sign-in.service';
import { SsoClient } from './sso-client';
import { SsoErrors } from './sso-errors';
import { FederatedPeople, personEmail, PersonRefusal } from '../../federation/people';
import { SsoRequestsRepository } from './sso-requests.repository';
import { bindingCookie, bindingCookieScope, isStale } from './sso-rules';
import { SSO_SETTINGS, SsoSettings } from './sso-settings';

/** Requests expired longer ago than this are deleted whenever a new one is made (their refusal says "expired" till then). */
const KEEP_EXPIRED_MS = 24 * 3600 * 1000;

/** A started sign-in: where the browser goes (the issuer's authorization endpoint), and the binding cookie it keeps. */
export interface SsoStart {
  url: string;
  cookie: string;
}

/** The authorization response at the callback, as the browser brought it (docs/api.md#get-v1consolessocallback). */
export interface SsoCallback {
  /**
   * The organization named by the callback's path (`/v1/console/sso/callback/<organization>`, decoded); undefined at
   * the shared path `/v1/console/sso/callback` (docs/adr/0042-sso-redirect-uri-per-organization.md).
   */
  organization?: string;
  code?: string;
  state?: string;
  error?: string;
  /** The whole query string, as the identity provider wrote it (openid-client reads `iss` and the rest from it). */
  query: string;
  /** The binding cookie's value. */
  binding?: string;
}

/**
 * The callback's caller: the one-time sign-in link the browser is sent to, which the console trades as usual, and the
 * binding cookie again, kept as long as the link lasts: the link is traded only with it.
 */
export interface SsoSignIn {
  url: string;
  cookie: string;
}

const sha256 = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');

const PERSON_ERRORS: Record<Exclude<PersonRefusal, 'no_access' | 'member_removed'>, (email: string) => AppError> = {
  no_email: () => SsoErrors.noEmail(),
  email_not_verified: () => SsoErrors.emailNotVerified(),
  email_domain_not_allowed: (email) => SsoErrors.emailDomainNotAllowed(email),
};

/**
 * Console single sign-on (docs/console.md#single-sign-on): a sign-in started at the organization's
 * people issuer, and its callback, which checks the answer and hands the member to the console as a one-time sign-in
 * link does. State, nonce and PKCE verifier are kept in console_sso_requests (one use, on any instance); a cookie binds
 * the request to the browser that started it (docs/adr/0039-console-single-sign-on.md).
 */
@Injectable()
export class ConsoleSsoService {
  private readonly logger = new Logger('ConsoleSso');
  private readonly publicBaseUrl: string;
  private readonly cookie: { path: string; secure: boolean };

  constructor(
    private readonly requests: SsoRequestsRepository,
    private readonly client: SsoClient,
    private readonly members: FederatedPeople,
    private readonly issuers: TrustedIssuersService,
    private readonly verifier: SubjectTokenVerifier,
    private readonly identity: IdentityService,
    private readonly signIn: ConsoleSignInService,
    private readonly metrics: Metrics,
    @Inject(FAILURE_COUNTER) private readonly starts: FailureCounter,
    @Inject(SSO_SETTINGS) private readonly settings: SsoSettings,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.publicBaseUrl = config.console.publicBaseUrl;
    this.cookie = bindingCookieScope(config.console.publicBaseUrl);
  }

  /** The redirect URI of the organization's people issuer (federation's peopleRedirectUri: docs/adr/0042). */
  redirectUriOf(organizationName: string, issParameterSupported: boolean): string {
    return peopleRedirectUri(this.publicBaseUrl, organizationName, issParameterSupported);
  }

  /**
   * Starts a sign-in at the organization's people issuer: 404 without one (an unknown organization reads the same),
   * 429 past SsoSettings.startsPerMinute for the client network (each start stores a row), 503 when the issuer's
   * discovery document cannot be had.
   */
  async start(organizationName: string, address: string | undefined, now = new Date()): Promise<SsoStart> {
    const entry = await this.peopleIssuerOf(organizationName);
    const slot = await this.starts.reserve(
      `console-sso-start:addr:${clientNetwork(address)}`,
      this.settings.startsPerMinute,
      60_000,
    );
    if (!slot.granted) {
      this.metrics.rateLimited('console_sso_starts');
      throw tooManyRequests('too_many_sso_starts', slot.resetsInMs);
    }
    const state = randomState();
    const nonce = randomNonce();
    const codeVerifier = randomPKCECodeVerifier();
    const binding = randomBytes(32).toString('base64url');
    let url: string;
    try {
      url = await this.client.authorizationUrl(entry, {
        redirectUri: this.redirectUriOf(organizationName, await this.client.announcesIss(entry)),
        state,
        nonce,
        codeChallenge: await calculatePKCECodeChallenge(codeVerifier),
      });
    } catch (error) {
      // The issuer is unreachable: not the client's doing.
      slot.release();
      throw error;
    }
    await this.requests.pruneExpired(new Date(now.getTime() - KEEP_EXPIRED_MS));
    await this.requests.insert({
      stateHash: sha256(state),
      bindingHash: sha256(binding),
      organizationId: entry.organizationId,
      trustedIssuerId: entry.id,
      nonce,
      codeVerifier,
      createdAt: now,
      expiresAt: new Date(now.getTime() + this.settings.requestSeconds * 1000),
    });
    return {
      url,
      cookie: bindingCookie(binding, { ...this.cookie, maxAgeSeconds: this.settings.requestSeconds }),
    };
  }

  /**
   * The callback: the request of `state` used up (once, by the browser that started it), the code exchanged, the ID
   * token checked, the person mapped to a member (or added with the issuer's just-in-time role), and a one-time
   * sign-in link made for them whose `console.signed_in` records `sso:<trusted issuer id>`. Every refusal is an
   * AppError whose message the page shows, and leaves nothing behind.
   */
  async complete(callback: SsoCallback, request: RequestContext): Promise<SsoSignIn> {
    try {
      return await this.completeOrRefuse(callback, request);
    } catch (error) {
      if (error instanceof AppError && error.code !== ErrorCode.INTERNAL) {
        this.logger.log({ code: error.code, reason: error.message }, 'console single sign-on refused');
      }
      throw error;
    }
  }

  private async completeOrRefuse(callback: SsoCallback, request: RequestContext): Promise<SsoSignIn> {
    const { code, state, error } = callback;
    // No answer at all, at either path: the 401 of a route without its credential.
    if (code === undefined && state === undefined && error === undefined) throw SsoErrors.noCredential();
    if (state === undefined) throw SsoErrors.malformed();
    if (code === undefined && error === undefined) throw SsoErrors.malformed();
    const now = new Date();
    const stateHash = sha256(state);
    // No cookie: a hash no request has (a binding is 32 random bytes), so the state alone opens nothing.
    const binding = callback.binding ?? '';
    const bindingHash = sha256(binding);
    const pending = await this.requests.consume(stateHash, bindingHash, now);
    if (pending === null) {
      const reason = await this.requests.unusableReason(stateHash, now);
      if (reason === 'used') throw SsoErrors.usedState();
      if (reason === 'expired') throw SsoErrors.expiredState(Math.round(this.settings.requestSeconds / 60));
      if (reason === 'other_browser') throw SsoErrors.otherBrowser();
      throw SsoErrors.unknownState();
    }
    const organization = await this.identity.organizationById(pending.organizationId);
    // The organization's people issuer still the one the sign-in was started at (not removed, nor replaced since).
    const entry = await this.issuers.peopleIssuerOf(organization.name);
    const clientSecret =
      entry !== null && entry.id === pending.trustedIssuerId ? this.issuers.clientSecretOf(entry) : null;
    if (entry === null || clientSecret === null) throw SsoErrors.issuerGone();

    // Whose answer this is, before anything is sent anywhere: it must arrive at the redirect URI its sign-in was
    // started with (RFC 9700 section 4.4.2), the one of the sign-in's issuer as its (cached) discovery document says
    // now; a document changed since the start merely refuses. Anything else is another provider's answer (the mix-up
    // attack, section 4.4.1), or a misconfigured one, and its code must reach no token endpoint. The state is used up
    // and the cookie removed: both have been where they should not. A provider's `error` is refused the same way.
    const expected = this.redirectUriOf(organization.name, await this.client.announcesIss(entry));
    const shared = this.redirectUriOf(organization.name, true);
    const arrived = callback.organization === undefined ? shared : this.redirectUriOf(callback.organization, false);
    if (arrived !== expected) {
      this.logger.warn(
        { organization: organization.name, expected, arrived },
        'console single sign-on: an answer at another redirect URI than its sign-in was started with ' +
          '(possible mix-up, RFC 9700 section 4.4)',
      );
      throw SsoErrors.otherRedirectUri();
    }
    if (error !== undefined) throw SsoErrors.providerError(error);

    // openid-client sends this URL without its query as the token request's redirect_uri (RFC 6749 section 4.1.3):
    // the one the sign-in started with. At the shared URI `iss` is required whatever the document says by the time
    // of the exchange: the shared URI is safe only with it (RFC 9207 section 2.4), and a document refreshed between
    // the check above and the exchange must not drop the requirement.
    const callbackUrl = new URL(`${expected}?${callback.query}`);
    const idToken = await this.client.idToken(entry, clientSecret, callbackUrl, {
      state,
      nonce: pending.nonce,
      codeVerifier: pending.codeVerifier,
      requireIss: expected === shared,
    });
    const claims = await this.verifiedClaims(entry, idToken, now);
    const person = personEmail(claims, entry.emailDomains);
    if (!person.ok) throw PERSON_ERRORS[person.refusal](String(claims.email));
    const member = await this.members.memberFor(entry, person.email, request);
    if (!member.ok) {
      // The address as the identity provider sent it, not as users.email keeps it (lower case): the person's own.
      const received = String(claims.email).trim();
      throw member.refusal === 'member_removed'
        ? SsoErrors.accessRemoved(received, organization.name)
        : SsoErrors.noAccess(received, organization.name);
    }
    // The link is bound to this browser as the sign-in was: someone who sends the link of their own sign-in to another
    // person (login CSRF) signs no one in (docs/adr/0047-issuer-origins-and-bound-sso-links.md).
    const link = await this.signIn.issueLink(organization.id, member.userId, `sso:${entry.id}`, { bindingHash });
    return {
      url: link.url,
      cookie: bindingCookie(binding, { ...this.cookie, maxAgeSeconds: SIGN_IN_LINK_SECONDS }),
    };
  }

  /**
   * The ID token's signature against the issuer's published keys, its algorithm, `iss`, `aud` (this entry's client
   * id), `exp` and `iat` (federation's SubjectTokenVerifier, as the token exchange checks a person's ID token), and an
   * `iat` of the last 5 minutes: the token was issued for this sign-in.
   */
  private async verifiedClaims(entry: TrustedIssuer, idToken: string, now: Date): Promise<Record<string, unknown>> {
    const outcome = await this.verifier.verify(idToken, 'people', now.getTime());
    if (!outcome.ok) {
      if (outcome.reason === 'issuer_unavailable') throw SsoErrors.unavailable(outcome.detail);
      this.logger.log({ reason: outcome.reason, detail: outcome.detail }, 'ID token refused');
      throw SsoErrors.idTokenRefused(outcome.reason);
    }
    if (!outcome.issuers.some((candidate) => candidate.id === entry.id))
      throw SsoErrors.idTokenRefused('wrong_audience');
    if (isStale(outcome.claims.iat, Math.floor(now.getTime() / 1000)))
      throw SsoErrors.idTokenRefused('issued too long ago');
    return outcome.claims;
  }

  /** The organization's people issuer (one at most); 404 for an unknown organization too. */
  private async peopleIssuerOf(organizationName: string): Promise<TrustedIssuer> {
    let entry: TrustedIssuer | null;
    try {
      entry = await this.issuers.peopleIssuerOf(organizationName);
    } catch (error) {
      if (error instanceof AppError && error.code === ErrorCode.NOT_FOUND) throw SsoErrors.notConfigured();
      throw error;
    }
    if (entry === null || entry.clientId === null) throw SsoErrors.notConfigured();
    return entry;
  }
}
