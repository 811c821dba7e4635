import { applyDecorators, createParamDecorator, ExecutionContext, SetMetadata } from '@nestjs/common';
import type { Request } from 'express';
import { ApiBearerAuth } from '@nestjs/swagger';
import { ApiErrors, BEARER_SCHEME } from '../common/openapi';
import type { Permission } from './roles';
import type { Principal } from './principal';

/*
 * A route's access rule, declared on its controller and enforced by auth's global Bearer guard.
 * The vocabulary lives here, beside roles and permissions, so that controllers of every module use
 * it without importing auth (which itself depends on api-keys): dependencies point one way.
 */

export const IS_PUBLIC = 'gatehouse:public';
export const REQUIRED_PERMISSIONS = 'gatehouse:permissions';
export const ANY_MEMBER = 'gatehouse:any-member';
export const SESSION_ONLY = 'gatehouse:session-only';

/** Opts a route out of the global Bearer guard (JWKS, health, /v1/token with its own guard). */
export const Public = (): MethodDecorator & ClassDecorator => SetMetadata(IS_PUBLIC, true);

/**
 * A Bearer-authenticated route that needs these permissions in the caller's organization: the one
 * place a route's access rule is declared (and documented in the OpenAPI document).
 */
export const RequirePermissions = (...permissions: Permission[]): MethodDecorator & ClassDecorator =>
  applyDecorators(
    SetMetadata(REQUIRED_PERMISSIONS, permissions),
    ApiBearerAuth(BEARER_SCHEME),
    ApiErrors(401, 403, 503),
  );

/**
 * A Bearer-authenticated route open to every member of the caller's organization, whatever the role (and an access
 * token whatever its key's scopes): the explicit declaration that the route needs no permission, so that a route that
 * names none by mistake stands out in the route table test.
 */
export const AnyMember = (): MethodDecorator & ClassDecorator =>
  applyDecorators(SetMetadata(ANY_MEMBER, true), ApiBearerAuth(BEARER_SCHEME), ApiErrors(401, 503));

/**
 * A route for the member in person, any role, with a session token (console, CLI): an access token,
 * whatever its scopes, gets 403 (signing out ends the member's sessions, which no API key may do).
 */
export const SessionOnly = (): MethodDecorator & ClassDecorator =>
  applyDecorators(
    SetMetadata(ANY_MEMBER, true),
    SetMetadata(SESSION_ONLY, true),
    ApiBearerAuth(BEARER_SCHEME),
    ApiErrors(401, 403, 503),
  );

/** The authenticated caller of this request. */
export const CurrentPrincipal = createParamDecorator((_data: unknown, context: ExecutionContext): Principal => {
  const principal = context.switchToHttp().getRequest<Request>().principal;
  if (principal === undefined) throw new Error('CurrentPrincipal used on a route without authentication');
  return principal;
});
