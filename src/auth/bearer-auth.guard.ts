import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { clientAddress } from '../common/client-address';
import { permissionDenied } from '../common/errors';
import { ROUTE_ACCESS, RouteAccess, setCaller } from '../identity/access.decorators';
import { maskGrants } from '../identity/roles';
import { bearerCredential, TokenAuthenticator, TokenRefusal } from './token-authenticator';

/** A token in the query or body as well as the header: refused (RFC 6750 section 2, one method only). */
function sendsTokenTwice(request: Request): boolean {
  const body: unknown = request.body;
  const inBody =
    typeof body === 'object' && body !== null && Boolean((body as { access_token?: unknown }).access_token);
  return inBody || Boolean((request.query as { access_token?: unknown } | undefined)?.access_token);
}

/**
 * The global guard: each route's declared access (`@Authenticated`, `@Public`). Bearer routes are checked here: the
 * token by the TokenAuthenticator (signature, audience, liveness, the allowlist), then the route's permissions
 * (docs/adr/0012-bearer-guard-without-passport.md); a route of another scheme is left to its own guard, which runs
 * next; a route that declares nothing is refused, whoever calls.
 * Only refusals are 401/403: a database that cannot answer reaches the exception filter as a 503.
 */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly authenticator: TokenAuthenticator,
  ) {}

  /** Public and other schemes' routes answer at once, with no promise (docs/performance.md#promises-on-node-20). */
  canActivate(context: ExecutionContext): boolean | Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const access = this.reflector.getAllAndOverride<RouteAccess | undefined>(ROUTE_ACCESS, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (access === undefined)
      throw new Error(`${context.getClass().name}.${context.getHandler().name} declares no access`);
    if (access.kind !== 'bearer') return true;
    return this.authenticate(context, access);
  }

  private async authenticate(context: ExecutionContext, access: RouteAccess & { kind: 'bearer' }): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const token = bearerCredential(request.headers.authorization);
    if (token instanceof TokenRefusal) throw token.error();
    if (sendsTokenTwice(request)) throw new TokenRefusal('token_sent_twice').error();
    // The key's allowlist holds for its tokens here too (docs/api.md#allowlists-and-rate-limits).
    const authenticated = await this.authenticator.authenticate(token, { address: () => clientAddress(request) });
    if (authenticated instanceof TokenRefusal) throw authenticated.error();
    const { principal } = authenticated;

    // The route's permissions against the request's: the role's, narrowed by an access token's key
    // and token scopes (docs/api.md#scopes).
    for (const permission of access.permissions) {
      if (!maskGrants(principal.permissions, permission)) throw permissionDenied();
    }
    if (access.sessionOnly && principal.tokenUse === 'access') throw permissionDenied('session_token_required');
    setCaller(request, principal);
    return true;
  }
}
