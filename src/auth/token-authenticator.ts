import { Injectable } from '@nestjs/common';
import type { KeyRateLimit } from '../api-keys/key-policies';
import { allowList } from '../common/cidr';
import { AppError } from '../common/errors';
import { CredentialUsageCounter } from '../credentials/credential-usage.counter';
import type { UsageChannel } from '../credentials/credential-usage.entity';
import type { Principal } from '../identity/principal';
import { roleMask } from '../identity/roles';
import { IdentityService } from '../identity/identity.service';
import {
  CredentialKind,
  CredentialLivenessKinds,
  CredentialRefusalReason,
  credentialRefusal,
  LiveCredential,
} from './credential-liveness';
import { KeyRequestLimiter, RateLimitFields } from './key-request-limiter';
import { TokenClaims, TokenService, VerifiedToken } from './token.service';

/**
 * Why a token was not accepted, whichever entry point asked: one set of reasons (each error's `reason`; introspection
 * answers every one of them `{ active: false }`).
 */
export type TokenRefusalReason =
  /** No credential presented. */
  | 'token_missing'
  /** Not `Authorization: Bearer <token>`. */
  | 'token_malformed'
  /** The token in the query or the body as well as the header (RFC 6750 section 2: one method only). */
  | 'token_sent_twice'
  /** Not a token of ours: signature, key id, issuer or claims. */
  | 'token_invalid'
  /** A token of ours past its `exp`. */
  | 'access_token_expired'
  /** Minted for another audience than the one asking. */
  | 'token_wrong_audience'
  /** A session token where only access tokens are taken (resource servers, gateways). */
  | 'token_wrong_use'
  /** A session token issued before its member signed out (or was removed and added back). */
  | 'session_ended'
  | CredentialRefusalReason
  /** The credential's allowlist does not have the client's address. */
  | 'address_not_allowed';

/**
 * A refused token: the reason, and as an error the Gatehouse API's own answer (401 with the Bearer challenge; 403 for
 * an address outside the allowlist). Entry points with another contract render the reason their way (forward auth's
 * RFC 6750 `error`, introspection's `{ active: false }`).
 */
export class TokenRefusal {
  constructor(readonly reason: TokenRefusalReason) {}

  error(): AppError {
    if (this.reason === 'address_not_allowed') {
      return new AppError(this.reason);
    }
    return new AppError(this.reason, { headers: { 'WWW-Authenticate': 'Bearer realm="gatehouse"' } });
  }
}

/** An accepted token: the live principal, the claims it carries, and its credential's rate-limit fields if counted. */
export interface TokenAuthentication {
  principal: Principal;
  claims: TokenClaims;
  /** Set when the request was counted against its credential's rate limit: the fields to answer with. */
  rateLimit: RateLimitFields | null;
}

/** What the entry point asks of a token besides being live. */
export interface TokenCheck {
  /**
   * Gatehouse's own API (omitted): a session or an access token for the default audience. Otherwise the audience of a
   * registered resource server: an access token minted for exactly it (docs/adr/0033-one-audience-one-place.md). A
   * function is asked only once the token's signature is valid (forward auth reads its gateway's parameters then).
   */
  audience?: string | (() => string);
  /**
   * The client's address, held against the credential's allowlist (asked only for a credential that has one). Omitted:
   * not checked (introspection without `client_ip` answers the allowlist instead).
   */
  address?: () => string | undefined;
  /** Count this request against the credential's rate limit (forward auth: docs/api.md#allowlists-and-rate-limits). */
  countRequest?: boolean;
  /**
   * Usage over time's channel (docs/api.md#usage-over-time): a refusal of the credential the token names is counted
   * there; the entry point counts the use it serves (countUse), once its own checks have passed.
   */
  usage?: Extract<UsageChannel, 'forward_auth' | 'introspection'>;
}

/** A credential's own policies, whatever presented it: a token or the credential itself (the key exchange). */
export interface CredentialPolicies {
  id: string;
  allowedCidrs: string | null | undefined;
  rateLimit: KeyRateLimit | null | undefined;
}

/** `Bearer <token>` (RFC 6750 section 2.1): the only place a token is read from, never the query string or the body. */
const BEARER_HEADER = /^Bearer [A-Za-z0-9._~+/-]+=*$/i;
const SCHEME_LENGTH = 'Bearer '.length;

/** The token of an `Authorization` header, or why there is none. */
export function bearerCredential(header: string | undefined): string | TokenRefusal {
  if (header === undefined || header === '') return new TokenRefusal('token_missing');
  return BEARER_HEADER.test(header) ? header.slice(SCHEME_LENGTH) : new TokenRefusal('token_malformed');
}

/**
 * The one answer to "is this token good for this request", for every entry point (the Bearer guard, forward auth,
 * introspection): the signature and claims, the audience, the credential's liveness (per kind, CredentialLivenessKinds) and
 * its owner's membership read now, the allowlist and the rate limit, in this order (docs/adr/0048-one-token-authenticator.md).
 * A refusal is returned, not thrown: each entry point answers it in its own protocol.
 */
@Injectable()
export class TokenAuthenticator {
  constructor(
    private readonly tokens: TokenService,
    private readonly identity: IdentityService,
    private readonly kinds: CredentialLivenessKinds,
    private readonly keyRequests: KeyRequestLimiter,
    private readonly usage: CredentialUsageCounter,
  ) {}

  async authenticate(token: string, check: TokenCheck = {}): Promise<TokenAuthentication | TokenRefusal> {
    const verified = this.tokens.verification(token);
    if (typeof verified === 'string') {
      return new TokenRefusal(verified === 'expired' ? 'access_token_expired' : 'token_invalid');
    }
    const { claims } = verified;
    if (check.audience === undefined) {
      if (claims.aud !== this.tokens.audience) return this.refused('token_wrong_audience', claims, check);
    } else {
      if (claims.token_use !== 'access') return this.refused('token_wrong_use', claims, check);
      const audience = typeof check.audience === 'string' ? check.audience : check.audience();
      // Never the default audience: Gatehouse's own tokens are not a resource server's.
      if (claims.aud !== audience || audience === this.tokens.audience) {
        return this.refused('token_wrong_audience', claims, check);
      }
    }
    const live = await this.live(verified);
    if (live instanceof TokenRefusal) {
      this.countRefusal(live.reason, claims, check);
      return live;
    }
    const { principal } = live;
    let rateLimit: RateLimitFields | null = null;
    if (
      principal.credentialId !== undefined &&
      (principal.credentialAllowedCidrs != null || principal.credentialRateLimit != null)
    ) {
      let admitted: RateLimitFields | null | TokenRefusal;
      try {
        admitted = await this.admit(
          {
            id: principal.credentialId,
            allowedCidrs: principal.credentialAllowedCidrs,
            rateLimit: principal.credentialRateLimit,
          },
          check.address,
          check.countRequest === true,
        );
      } catch (error) {
        // Past its rate limit (429).
        if (error instanceof AppError && error.reason === 'credential_rate_limited') {
          this.countRefusal(error.reason, claims, check);
        }
        throw error;
      }
      if (admitted instanceof TokenRefusal) {
        this.countRefusal(admitted.reason, claims, check);
        return admitted;
      }
      rateLimit = admitted;
    }
    return { principal, claims, rateLimit };
  }

  /**
   * Counts a use the entry point served (`succeeded`) or refused after the authenticator accepted the token (forward
   * auth's scope), in usage over time (docs/api.md#usage-over-time): a key's or a workload identity's, not a session's
   * or a grant's.
   */
  countUse(authentication: TokenAuthentication, channel: NonNullable<TokenCheck['usage']>, succeeded: boolean): void {
    const { claims, principal } = authentication;
    if (principal.credentialId === undefined || claims.grant_id !== undefined) return;
    this.usage.count(claims.client_type ?? 'api_key', principal.credentialId, claims.org, channel, succeeded);
  }

  /** A refusal after the token's signature was verified, counted (countRefusal). */
  private refused(reason: TokenRefusalReason, claims: TokenClaims, check: TokenCheck): TokenRefusal {
    this.countRefusal(reason, claims, check);
    return new TokenRefusal(reason);
  }

  /**
   * Counts a refusal in the channel of `check.usage` against the credential the token names: its claims are ours (the
   * signature was verified), so no table grows from garbage; not when it names none (a session), a grant, or a
   * credential that is not found.
   */
  private countRefusal(
    reason: TokenRefusalReason | 'credential_rate_limited',
    claims: TokenClaims,
    check: TokenCheck,
  ): void {
    const { usage } = check;
    if (
      usage !== undefined &&
      reason !== 'credential_not_found' &&
      claims.client_id !== undefined &&
      claims.grant_id === undefined
    ) {
      this.usage.count(claims.client_type ?? 'api_key', claims.client_id, claims.org, usage, false);
    }
  }

  /**
   * A credential's own policies for one request, whatever presented it (a token here, the key itself in
   * TokenExchangeService): its allowlist against `address` when given, then, when `count`, one request of its rate limit
   * (429 thrown past it). The fields to answer with, or null when nothing was counted.
   */
  async admit(
    policies: CredentialPolicies,
    address: (() => string | undefined) | undefined,
    count: boolean,
  ): Promise<RateLimitFields | null | TokenRefusal> {
    if (policies.allowedCidrs != null && address !== undefined && !allowList(policies.allowedCidrs).allows(address())) {
      return new TokenRefusal('address_not_allowed');
    }
    return count && policies.rateLimit != null ? this.keyRequests.take(policies.id, policies.rateLimit) : null;
  }

  /**
   * The token's principal, its credential and its owner's membership read now (docs/adr/0004): a session token's member
   * and sign-out; an access token's credential, by its kind. Written out field by field: made with `{ ...owner, ... }`,
   * V8 kept about 1 KB of every request past a scavenge and promoted it (`git log -p -- docs/performance.md`).
   */
  private async live(verified: VerifiedToken): Promise<{ principal: Principal } | TokenRefusal> {
    const { claims } = verified;
    // The credential id: a grant's `grant_id` (its `client_id` is then the OAuth client's), else `client_id` (TokenService
    // sets it from `akid` for a token minted before that claim was dropped).
    const credentialId = claims.grant_id ?? claims.client_id;
    if (credentialId === undefined) {
      const access = await this.identity.sessionAccess(claims.org, claims.sub);
      if (access === null) return new TokenRefusal('member_removed');
      if (!(claims.iat >= access.minIssuedAt)) return new TokenRefusal('session_ended');
      const { role } = access;
      return {
        principal: {
          userId: claims.sub,
          organizationId: claims.org,
          role,
          permissions: roleMask(role),
          tokenUse: claims.token_use,
        },
      };
    }
    const kind = this.kinds.of(kindOf(claims));
    const nowMs = Date.now();
    const found = await kind.read(credentialId);
    const refusal =
      credentialRefusal(found, { userId: claims.sub, organizationId: claims.org }, nowMs) ??
      kind.refusal?.(found as LiveCredential, nowMs) ??
      null;
    if (refusal !== null) return new TokenRefusal(refusal);
    const credential = found as LiveCredential;
    const { role } = credential.ownerAccess;
    if (claims.grant_id !== undefined) {
      // A grant's token: resource-server scopes, never Gatehouse permissions.
      return {
        principal: {
          userId: claims.sub,
          organizationId: claims.org,
          role,
          permissions: 0,
          tokenUse: claims.token_use,
          grantId: claims.grant_id,
          grantScope: claims.scope ?? '',
        },
      };
    }
    return {
      principal: {
        userId: claims.sub,
        organizationId: claims.org,
        role,
        permissions: roleMask(role) & credential.scopes & verified.permissions,
        tokenUse: claims.token_use,
        credentialId,
        credentialExpiresAtMs: credential.expiresAtMs,
        credentialAllowedCidrs: credential.allowedCidrs,
        credentialRateLimit: credential.rateLimit,
      },
    };
  }
}

function kindOf(claims: TokenClaims): CredentialKind {
  if (claims.grant_id !== undefined) return 'grant';
  return claims.client_type ?? 'api_key';
}
