import { Injectable } from '@nestjs/common';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { unauthenticatedBearer } from '../common/errors';
import { IdentityService } from '../identity/identity.service';
import type { Principal } from '../identity/principal';
import { TokenService } from './token.service';

/**
 * Turns a Bearer token into a principal. Besides the signature, every request re-reads the
 * membership (a role change or removal applies at once) and, for access tokens, the status of the
 * API key they were minted from (a revocation kills its tokens at once, on every instance).
 */
@Injectable()
export class PrincipalService {
  constructor(
    private readonly tokens: TokenService,
    private readonly identity: IdentityService,
    private readonly apiKeys: ApiKeysService,
  ) {}

  async fromBearerToken(token: string): Promise<Principal> {
    const claims = this.tokens.verify(token);
    if (claims === null) throw unauthenticatedBearer();
    const owner = { userId: claims.sub, organizationId: claims.org };
    // One query either way: an access token's key status comes with the membership.
    const role =
      claims.akid === undefined
        ? await this.identity.role(claims.org, claims.sub)
        : await this.apiKeys.roleThroughActiveKey(claims.akid, owner);
    if (role === null) throw unauthenticatedBearer();
    return { ...owner, role, tokenUse: claims.token_use, apiKeyId: claims.akid };
  }
}
