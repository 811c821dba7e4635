import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request, Response } from 'express';
import { bearerCredential, TokenAuthenticator, TokenRefusal } from '../auth/token-authenticator';
import { clientAddress } from '../common/client-address';
import { AppError, invalidArgument } from '../common/errors';
import { BEARER_SCHEME } from '../common/openapi';
import { setCaller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { maskGrants } from '../identity/roles';
import { gatewayParameters, requiredPermissions, requiredScopes } from './gateway-parameters';

const REALM = 'Bearer realm="gatehouse"';

/**
 * A refused token in RFC 6750 section 3's words: no `error` when no token was sent, `invalid_token` for every other
 * reason; 403 (no challenge) for an address outside the allowlist.
 */
function unauthorized(refusal: TokenRefusal): AppError {
  const { reason } = refusal;
  if (reason === 'address_not_allowed') return refusal.error();
  return new AppError(reason, {
    headers: { 'WWW-Authenticate': reason === 'token_missing' ? REALM : `${REALM}, error="invalid_token"` },
  });
}

function insufficientScope(required: readonly string[]): AppError {
  return new AppError('insufficient_scope', {
    headers: { 'WWW-Authenticate': `${REALM}, error="insufficient_scope", scope="${required.join(' ')}"` },
  });
}

/** A key's token needs permissions of the catalogue (400 for another name); a grant's, scopes it holds. */
function holds(principal: Principal, required: readonly string[]): boolean {
  if (principal.grantId !== undefined) {
    const granted = new Set(principal.grantScope!.split(' '));
    return required.every((name) => granted.has(name));
  }
  return requiredPermissions(required).every((permission) => maskGrants(principal.permissions, permission));
}

/**
 * Forward authentication's scheme: the Bearer access token a gateway passes on, asked of the TokenAuthenticator for the
 * gateway's `audience` (a registered resource server's, docs/adr/0033-one-audience-one-place.md), live, within its
 * credential's allowlist and rate limit; then the `scope` the gateway requires: 401 or 403 with the RFC 6750 challenge.
 * The token first: without a valid one, nothing is said about audiences or permissions. The caller is the token's
 * Principal.
 */
@Injectable()
export class GatewayTokenGuard implements CanActivate {
  static readonly securityScheme = BEARER_SCHEME;

  constructor(private readonly authenticator: TokenAuthenticator) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const token = bearerCredential(request.headers.authorization);
    if (token instanceof TokenRefusal) throw unauthorized(token);
    let required: string[] = [];
    // A token for another audience is 401 invalid_token whatever the gateway's audience is, registered or not (nor the
    // default one): one answer, and no registry read, so that a token holder learns nothing about which audiences
    // exist. A token names an audience that was registered when it was minted.
    const authenticated = await this.authenticator.authenticate(token, {
      audience: () => {
        const { audience, scope } = gatewayParameters(request.originalUrl);
        required = requiredScopes(scope);
        if (audience === undefined || audience === '') throw invalidArgument('forward_auth_parameters_invalid');
        return audience;
      },
      // The key's own policies (docs/resource-servers.md#allowlists-and-rate-limits): the address the gateway forwards
      // (TRUST_PROXY), then one request of the key counted, its RateLimit fields on every answer that follows.
      address: () => clientAddress(request),
      countRequest: true,
      // Usage over time (docs/api.md#usage-over-time): refusals counted there, this answer below.
      usage: 'forward_auth',
    });
    if (authenticated instanceof TokenRefusal) throw unauthorized(authenticated);
    const { principal, rateLimit } = authenticated;
    if (rateLimit !== null) {
      const response = context.switchToHttp().getResponse<Response>();
      response.setHeader('RateLimit-Policy', rateLimit['RateLimit-Policy']);
      response.setHeader('RateLimit', rateLimit.RateLimit);
    }
    const allowed = holds(principal, required);
    this.authenticator.countUse(authenticated, 'forward_auth', allowed);
    if (!allowed) throw insufficientScope(required);
    setCaller(request, principal satisfies Principal);
    return true;
  }
}
