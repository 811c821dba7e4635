import { ExecutionContext, Injectable } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AuthGuard } from '@nestjs/passport';
import type { Request } from 'express';
import { permissionDenied, unauthenticatedBearer } from '../common/errors';
import { Permission, roleGrants } from '../identity/roles';
import { IS_PUBLIC, REQUIRED_PERMISSIONS } from './auth.decorators';
import type { Principal } from './principal';

const BEARER_HEADER = /^Bearer [A-Za-z0-9._~+/-]+=*$/i;

/**
 * The global guard (APP_GUARD): every route needs a valid Bearer token unless it is @Public(), and
 * the permissions its @RequirePermissions() names. Failures throw the exact SPEC.md errors with
 * WWW-Authenticate, rather than the bare 401 of @nestjs/passport.
 */
@Injectable()
export class BearerAuthGuard extends AuthGuard('bearer') {
  constructor(private readonly reflector: Reflector) {
    super();
  }

  override async canActivate(context: ExecutionContext): Promise<boolean> {
    if (context.getType() !== 'http') return true;
    const targets = [context.getHandler(), context.getClass()];
    if (this.reflector.getAllAndOverride<boolean>(IS_PUBLIC, targets)) return true;

    const request = context.switchToHttp().getRequest<Request>();
    const header = request.headers.authorization;
    if (typeof header !== 'string' || !BEARER_HEADER.test(header)) throw unauthenticatedBearer();
    await super.canActivate(context);
    const principal = request.user as Principal;
    request.principal = principal;

    const required = this.reflector.getAllAndOverride<Permission[] | undefined>(REQUIRED_PERMISSIONS, targets) ?? [];
    if (!required.every((permission) => roleGrants(principal.role, permission))) throw permissionDenied();
    return true;
  }

  override handleRequest<TUser>(error: unknown, user: TUser | false): TUser {
    if (error instanceof Error) throw error;
    if (error) throw unauthenticatedBearer();
    if (!user) throw unauthenticatedBearer();
    return user;
  }
}
