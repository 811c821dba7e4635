import {
  applyDecorators,
  CanActivate,
  createParamDecorator,
  ExecutionContext,
  SetMetadata,
  Type,
  UseGuards,
} from '@nestjs/common';
import { ApiBearerAuth, ApiSecurity } from '@nestjs/swagger';
import { ApiErrors, BEARER_SCHEME } from '../common/openapi';
import { ErrorCode } from '../common/errors';
import type { Permission } from './roles';

/*
 * How a route authenticates its caller: exactly one declaration per route, `@Authenticated(...)` or `@Public()`, read by
 * auth's global guard and the OpenAPI document (docs/architecture.md#authentication). The vocabulary lives here, beside
 * roles and permissions, so that controllers of every module use it without importing auth (which itself depends on
 * api-keys): dependencies point one way.
 */

/** A scheme other than Bearer: a guard that authenticates the caller and hands it over with `setCaller`. */
export interface AuthenticationScheme extends Type<CanActivate> {
  /** The security scheme of the OpenAPI document (common/openapi.ts), or none for a scheme it cannot describe. */
  readonly securityScheme: string | null;
}

/** Bearer (a session or access token): the permissions the route needs, none for any member. */
export interface BearerAccess {
  permissions?: readonly Permission[];
  /** Every member of the caller's organization, whatever the role: the explicit "no permission needed". */
  anyMember?: true;
  /** The member in person (a session token): an access token, whatever its scopes, is refused. */
  sessionOnly?: true;
}

export type RouteAccess =
  | { kind: 'public' }
  | { kind: 'bearer'; permissions: readonly Permission[]; sessionOnly: boolean }
  | { kind: 'scheme'; scheme: AuthenticationScheme };

export const ROUTE_ACCESS = 'gatehouse:access';

/** A route that takes no credential at all (health, JWKS, discovery documents, a report anyone may send). */
export const Public = (): MethodDecorator & ClassDecorator =>
  SetMetadata<string, RouteAccess>(ROUTE_ACCESS, { kind: 'public' });

function isScheme(access: BearerAccess | AuthenticationScheme): access is AuthenticationScheme {
  return typeof access === 'function';
}

/**
 * The one declaration of who may call a route: Bearer with its permissions (`{ permissions: [...] }`, `{ anyMember:
 * true }`, `{ sessionOnly: true }`), or another scheme's guard (`ApiKeyGuard`, `ResourceServerGuard`, ...). It also
 * documents the route's security and its refusals in the OpenAPI document. The caller reaches the handler as
 * `@Caller()`.
 */
export function Authenticated(access: BearerAccess | AuthenticationScheme): MethodDecorator & ClassDecorator {
  if (isScheme(access)) {
    return applyDecorators(
      SetMetadata<string, RouteAccess>(ROUTE_ACCESS, { kind: 'scheme', scheme: access }),
      UseGuards(access),
      ...(access.securityScheme === null ? [] : [ApiSecurity(access.securityScheme)]),
    );
  }
  const permissions = access.permissions ?? [];
  if (permissions.length > 0 === (access.anyMember === true || access.sessionOnly === true)) {
    throw new Error('@Authenticated: name the permissions, or anyMember, or sessionOnly');
  }
  const sessionOnly = access.sessionOnly === true;
  return applyDecorators(
    SetMetadata<string, RouteAccess>(ROUTE_ACCESS, { kind: 'bearer', permissions, sessionOnly }),
    ApiBearerAuth(BEARER_SCHEME),
    // Any member: no permission, so no 403 (but for an access token on a session-only route).
    permissions.length > 0 || sessionOnly
      ? ApiErrors(ErrorCode.UNAUTHENTICATED, ErrorCode.PERMISSION_DENIED, ErrorCode.UNAVAILABLE)
      : ApiErrors(ErrorCode.UNAUTHENTICATED, ErrorCode.UNAVAILABLE),
  );
}

/**
 * The caller each request's guard authenticated, handed to the handler as a parameter (`@Caller()`): kept under a
 * symbol of this module, which no other code can read or type. Not a WeakMap keyed by the request: its entries kept each
 * caller into the old generation (a larger heap, slower scavenges: docs/performance.md#promises-on-node-20).
 */
const CALLER = Symbol('gatehouse.caller');

type WithCaller = { [CALLER]?: unknown };

/** For the guards: the authenticated caller of this request. */
export function setCaller(request: object, caller: unknown): void {
  (request as WithCaller)[CALLER] = caller;
}

/**
 * The authenticated caller: a `Principal` under Bearer, what the route's scheme names otherwise (`ApiKeyCaller`,
 * `AuthenticatedResourceServer`, ...).
 */
export const Caller = createParamDecorator((_data: unknown, context: ExecutionContext): unknown =>
  callerOf(context.switchToHttp().getRequest<object>()),
);

/** The caller a guard set for this request; an error where none did (a handler of a @Public() route). */
export function callerOf(request: object): unknown {
  const caller = (request as WithCaller)[CALLER];
  if (caller === undefined) throw new Error('@Caller() on a route whose guard authenticated nobody');
  return caller;
}
