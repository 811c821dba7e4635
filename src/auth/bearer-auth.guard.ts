import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { permissionDenied, unauthenticatedBearer } from '../common/errors';
import { IS_PUBLIC, REQUIRED_PERMISSIONS, SESSION_ONLY } from '../identity/access.decorators';
import { maskGrants, Permission } from '../identity/roles';
import { PrincipalService } from './principal.service';

/**
 * `Bearer <token>` (RFC 6750 section 2.1): the only place a token is read from, never the query
 * string or the body.
 */
const BEARER_HEADER = /^Bearer [A-Za-z0-9._~+/-]+=*$/i;
const SCHEME_LENGTH = 'Bearer '.length;

/**
 * An `access_token` in the query string or the body as well as the header: RFC 6750 section 2 lets
 * a client use one method only. Such a request is refused, as it was while passport-http-bearer
 * read the header (it failed the attempt), rather than served on the header's token.
 */
function sendsTokenTwice(request: Request): boolean {
  const body: unknown = request.body;
  const inBody =
    typeof body === 'object' && body !== null && Boolean((body as { access_token?: unknown }).access_token);
  return inBody || Boolean((request.query as { access_token?: unknown } | undefined)?.access_token);
}

/**
 * The global guard (APP_GUARD): every route needs a valid Bearer token unless it is @Public(), and
 * the permissions its @RequirePermissions() names (the role's, and for an access token its scopes'
 * too). It reads the header itself, as nest's JWT sample does, rather than through Passport
 * (docs/adr/0012-bearer-guard-without-passport.md). Refusals
 * throw the exact 401 with WWW-Authenticate or the 403; any other error from PrincipalService (a
 * database that cannot answer) goes on to the exception filter, which makes it a 503, not a 401.
 */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly principals: PrincipalService,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;

    const request = context.switchToHttp().getRequest<Request>();
    const header = request.headers.authorization;
    if (typeof header !== 'string' || !BEARER_HEADER.test(header) || sendsTokenTwice(request)) {
      throw unauthenticatedBearer();
    }
    const principal = await this.principals.fromBearerToken(header.slice(SCHEME_LENGTH));
    request.principal = principal;

    // The route's permissions against the request's: the role's, narrowed by an access token's key
    // and token scopes (docs/api.md#scopes).
    const required = this.reflector.getAllAndOverride<Permission[] | undefined>(REQUIRED_PERMISSIONS, targets);
    if (required !== undefined) {
      for (const permission of required) if (!maskGrants(principal.permissions, permission)) throw permissionDenied();
    } else if (principal.tokenUse === 'access' && this.reflector.getAllAndOverride<boolean>(SESSION_ONLY, targets)) {
      throw permissionDenied();
    }
    return true;
  }
}
