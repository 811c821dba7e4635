import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { permissionDenied, unauthenticatedBearer } from '../common/errors';
import { Permission, roleGrants } from '../identity/roles';
import { IS_PUBLIC, REQUIRED_PERMISSIONS } from '../identity/access.decorators';
import { BearerStrategy } from './bearer.strategy';

/** `Bearer <token>`: the only place a token is read from (never the query string or the body). */
const BEARER_HEADER = /^Bearer [A-Za-z0-9._~+/-]+=*$/i;

/**
 * The global guard (APP_GUARD): every route needs a valid Bearer token unless it is @Public(), and
 * the permissions its @RequirePermissions() names. Failures throw the exact SPEC.md errors with
 * WWW-Authenticate (not the bare 401 of @nestjs/passport's AuthGuard, which this does not use:
 * that guard always goes through passport's process-wide authenticator; see BearerStrategy).
 */
@Injectable()
export class BearerAuthGuard implements CanActivate {
  constructor(
    private readonly reflector: Reflector,
    private readonly bearer: BearerStrategy,
  ) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;

    const request = context.switchToHttp().getRequest<Request>();
    const header = request.headers.authorization;
    if (typeof header !== 'string' || !BEARER_HEADER.test(header)) throw unauthenticatedBearer();
    const principal = await this.bearer.authenticateRequest(request);
    request.principal = principal;

    const required = this.reflector.getAllAndOverride<Permission[] | undefined>(REQUIRED_PERMISSIONS, targets) ?? [];
    if (!required.every((permission) => roleGrants(principal.role, permission))) throw permissionDenied();
    return true;
  }
}
