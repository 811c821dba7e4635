import { Injectable } from '@nestjs/common';
import { KeyExchangeRules } from './key-exchange';
import { unauthenticatedBearer } from '../common/errors';
import { IdentityService } from '../identity/identity.service';
import type { Principal } from '../identity/principal';
import { roleMask } from '../identity/roles';
import { TokenClaims, TokenService, VerifiedToken } from './token.service';
import { WorkloadIdentitiesService } from '../workload-identities/workload-identities.service';
import { GrantsService } from '../grants/grants.service';

/** An access token's live principal and the claims it carries (introspection answers with both). */
export interface TokenPrincipal {
  principal: Principal;
  claims: TokenClaims;
}

/**
 * A Bearer token as a principal: every request re-reads the membership and an access token's key, so a revocation or
 * a role change applies at once on every instance (docs/api.md#scopes, #access-and-session-tokens).
 */
@Injectable()
export class PrincipalService {
  constructor(
    private readonly tokens: TokenService,
    private readonly identity: IdentityService,
    private readonly exchange: KeyExchangeRules,
    private readonly identities: WorkloadIdentitiesService,
    private readonly grants: GrantsService,
  ) {}

  async fromBearerToken(token: string): Promise<Principal> {
    const verified = this.tokens.forOwnApi(token);
    if (verified === null) throw unauthenticatedBearer();
    const principal = await this.fromVerified(verified);
    if (principal === null) throw unauthenticatedBearer();
    return principal;
  }

  /**
   * An access token's live principal for the resource server of `audience` (introspection): null unless it is an access
   * token of ours for exactly that audience, its key usable and its owner a member, read now. A token minted without
   * `resource` has the default audience, Gatehouse's own API's only (docs/adr/0033-one-audience-one-place.md).
   */
  async forResourceServer(token: string, audience: string): Promise<TokenPrincipal | null> {
    const verified = this.verifiedAccessToken(token);
    if (verified === null || verified.claims.aud !== audience || audience === this.tokens.audience) return null;
    return this.live(verified);
  }

  /** A valid access token of ours whatever its audience, or null: its signature and claims only, no state read. */
  verifiedAccessToken(token: string): VerifiedToken | null {
    const verified = this.tokens.verifiedToken(token);
    return verified !== null && verified.claims.token_use === 'access' ? verified : null;
  }

  /** A verified access token's live principal: its key usable and its owner a member, read now; else null. */
  async live(verified: VerifiedToken): Promise<TokenPrincipal | null> {
    const principal = await this.fromVerified(verified);
    return principal === null ? null : { principal, claims: verified.claims };
  }

  /**
   * The principal is written out field by field: made with `{ ...owner, ... }` after the key read, V8 kept about 1 KB
   * of every request past a scavenge and promoted it (measured 2026-11: `git log -p -- docs/performance.md`).
   */
  private async fromVerified(verified: VerifiedToken): Promise<Principal | null> {
    const { claims } = verified;
    if (claims.grant_id !== undefined) return this.throughGrant(claims, claims.grant_id);
    // The key id: `client_id` (TokenService sets it from `akid` for a token minted before that claim was dropped).
    const apiKeyId = claims.client_id;
    if (apiKeyId === undefined) {
      const access = await this.identity.sessionAccess(claims.org, claims.sub);
      // Signed out, or removed and added back, since the token was issued.
      if (access === null || !(claims.iat >= access.minIssuedAt)) return null;
      const { role } = access;
      return {
        userId: claims.sub,
        organizationId: claims.org,
        role,
        permissions: roleMask(role),
        tokenUse: claims.token_use,
      };
    }
    if (claims.client_type === 'workload_identity') return this.throughIdentity(verified, apiKeyId);
    // One query: the key's status, expiry and scopes come with the owner's membership.
    const found = await this.exchange.usableKey(apiKeyId, { userId: claims.sub, organizationId: claims.org });
    if (found === null) return null;
    const { role } = found.ownerAccess;
    return {
      userId: claims.sub,
      organizationId: claims.org,
      role,
      permissions: roleMask(role) & found.key.scopes & verified.permissions,
      tokenUse: claims.token_use,
      apiKeyId,
      apiKeyExpiresAtMs: found.key.expiresAtMs,
      apiKeyAllowedCidrs: found.key.allowedCidrs,
      apiKeyRateLimit: found.key.rateLimit,
    };
  }

  /** A grant's access token: the grant active and its person a member, read now; no permission here. */
  private async throughGrant(claims: TokenClaims, grantId: string): Promise<Principal | null> {
    const access = await this.grants.liveAccess(grantId, { organizationId: claims.org, userId: claims.sub });
    if (access === null) return null;
    return {
      userId: claims.sub,
      organizationId: claims.org,
      role: access.role,
      permissions: 0,
      tokenUse: claims.token_use,
      grantId,
      grantScope: claims.scope ?? '',
    };
  }

  /** An access token minted through a workload identity: the identity usable and its owner a member, read now. */
  private async throughIdentity(verified: VerifiedToken, identityId: string): Promise<Principal | null> {
    const { claims } = verified;
    const identity = await this.identities.usable(identityId, { userId: claims.sub, organizationId: claims.org });
    if (identity === null) return null;
    return {
      userId: claims.sub,
      organizationId: claims.org,
      role: identity.role,
      permissions: roleMask(identity.role) & identity.scopes & verified.permissions,
      tokenUse: claims.token_use,
      apiKeyId: identityId,
      apiKeyExpiresAtMs: identity.expiresAtMs,
      apiKeyAllowedCidrs: null,
      apiKeyRateLimit: null,
    };
  }
}
