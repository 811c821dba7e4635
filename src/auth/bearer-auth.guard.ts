import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { allowList } from '../common/cidr';
import { clientAddress } from '../common/client-address';
import { addressNotAllowed, permissionDenied, unauthenticatedBearer } from '../common/errors';
import { ROUTE_ACCESS, RouteAccess, setCaller } from '../identity/access.decorators';
import { maskGrants } from '../identity/roles';
import { PrincipalService } from './principal.service';

/**
 * `Bearer <token>` (RFC 6750 section 2.1): the only place a token is read from, never the query
 * string or the body.
 */
const BEARER_HEADER = /^Bearer [A-Za-z0-9._~+/-]+=*$/i;
const SCHEME_LENGTH = 'Bearer '.length;

/** The token of an `Authorization: Bearer <token>` header, or null when the header is not one. */
export function bearerToken(header: string | undefined): string | null {
  return typeof header === 'string' && BEARER_HEADER.test(header) ? header.slice(SCHEME_LENGTH) : null;
}

/** A token in the query or body as well as the header: refused (RFC 6750 section 2, one method only). */
function sendsTokenTwice(request: Request): boolean {
  const body: unknown = request.body;
  const inBody =
    typeof body === 'object' && body !== null && Boolean((body as { access_token?: unknown }).access_token);
  return inBody || Boolean((request.query as { access_token?: unknown } | undefined)?.access_token);
}

/**
 * The global guard: each route's declared access (`@Authenticated`, `@Public`). Bearer routes are checked here, a valid
 * token and the route's permissions (docs/adr/0012-bearer-guard-without-passport.md); a route of another scheme is left
 * to its own guard, which runs next; a route that declares nothing is refused, whoever calls.
 * Only refusals are 401/403: a database that cannot answer reaches the exception filter as a 503.
 */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly principals: PrincipalService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const access = this.reflector.getAllAndOverride<RouteAccess | undefined>(ROUTE_ACCESS, [
      context.getHandler(),
      context.getClass(),
    ]);
    if (access === undefined)
      throw new Error(`${context.getClass().name}.${context.getHandler().name} declares no access`);
    if (access.kind !== 'bearer') return true;

    const request = context.switchToHttp().getRequest<Request>();
    const token = bearerToken(request.headers.authorization);
    if (token === null || sendsTokenTwice(request)) throw unauthenticatedBearer();
    const principal = await this.principals.fromBearerToken(token);
    // The key's allowlist holds for its tokens here too (docs/api.md#allowlists-and-rate-limits).
    if (
      principal.credentialAllowedCidrs != null &&
      !allowList(principal.credentialAllowedCidrs).allows(clientAddress(request))
    ) {
      throw addressNotAllowed();
    }

    // The route's permissions against the request's: the role's, narrowed by an access token's key
    // and token scopes (docs/api.md#scopes).
    for (const permission of access.permissions) {
      if (!maskGrants(principal.permissions, permission)) throw permissionDenied();
    }
    if (access.sessionOnly && principal.tokenUse === 'access') throw permissionDenied();
    setCaller(request, principal);
    return true;
  }
}
