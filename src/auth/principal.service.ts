import { Injectable } from '@nestjs/common';
import { KeyExchangeRules } from './key-exchange';
import { unauthenticatedBearer } from '../common/errors';
import { IdentityService } from '../identity/identity.service';
import type { Principal } from '../identity/principal';
import { roleMask } from '../identity/roles';
import { TokenClaims, TokenService, VerifiedToken } from './token.service';

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
  ) {}

  async fromBearerToken(token: string): Promise<Principal> {
    const verified = this.tokens.authenticate(token);
    if (verified === null) throw unauthenticatedBearer();
    const principal = await this.fromVerified(verified);
    if (principal === null) throw unauthenticatedBearer();
    return principal;
  }

  /**
   * An access token's live principal for a resource server (introspection, forward auth): null unless it is an
   * access token of ours for `audience` (or the default audience), its key usable and its owner a member, read now.
   */
  async forResourceServer(token: string, audience: string): Promise<TokenPrincipal | null> {
    const verified = this.tokens.verifiedToken(token);
    if (verified === null || verified.claims.token_use !== 'access') return null;
    // A token for the default audience is accepted by every resource server (docs/resource-servers.md).
    const { aud } = verified.claims;
    if (aud !== audience && aud !== this.tokens.audience) return null;
    const principal = await this.fromVerified(verified);
    return principal === null ? null : { principal, claims: verified.claims };
  }

  /**
   * The principal is written out field by field: made with `{ ...owner, ... }` after the key read, V8 kept about 1 KB
   * of every request past a scavenge and promoted it (docs/performance.md, fourth pass).
   */
  private async fromVerified(verified: VerifiedToken): Promise<Principal | null> {
    const { claims } = verified;
    if (claims.akid === undefined) {
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
    // One query: the key's status, expiry and scopes come with the owner's membership.
    const found = await this.exchange.usableKey(claims.akid, { userId: claims.sub, organizationId: claims.org });
    if (found === null) return null;
    const { role } = found.ownerAccess;
    return {
      userId: claims.sub,
      organizationId: claims.org,
      role,
      permissions: roleMask(role) & found.key.scopes & verified.permissions,
      tokenUse: claims.token_use,
      apiKeyId: claims.akid,
      apiKeyExpiresAtMs: found.key.expiresAtMs,
    };
  }
}
