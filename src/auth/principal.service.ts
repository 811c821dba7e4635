import { Injectable } from '@nestjs/common';
import { KeyExchangeRules } from './key-exchange';
import { unauthenticatedBearer } from '../common/errors';
import { IdentityService } from '../identity/identity.service';
import type { Principal } from '../identity/principal';
import { roleMask } from '../identity/roles';
import { TokenClaims, TokenService, VerifiedToken } from './token.service';
import { WorkloadIdentitiesService } from '../workload-identities/workload-identities.service';

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
    // The key id: `client_id` (TokenService sets it from `akid` for a token minted before that claim was dropped).
    const credentialId = claims.client_id;
    if (credentialId === undefined) {
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
    if (claims.client_type === 'workload_identity') return this.throughIdentity(verified, credentialId);
    // One query: the key's status, expiry and scopes come with the owner's membership.
    const found = await this.exchange.usableKey(credentialId, { userId: claims.sub, organizationId: claims.org });
    if (found === null) return null;
    const { role } = found.ownerAccess;
    return {
      userId: claims.sub,
      organizationId: claims.org,
      role,
      permissions: roleMask(role) & found.key.scopes & verified.permissions,
      tokenUse: claims.token_use,
      credentialId,
      credentialExpiresAtMs: found.key.expiresAtMs,
      credentialAllowedCidrs: found.key.allowedCidrs,
      credentialRateLimit: found.key.rateLimit,
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
      credentialId: identityId,
      credentialExpiresAtMs: identity.expiresAtMs,
      credentialAllowedCidrs: null,
      credentialRateLimit: null,
    };
  }
}
