import { Get } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AnyMember, RequirePermissions } from '../src/identity/access.decorators';
import { describeAccess, expressRoutes, nestRouteDeclarations } from './support/routes';
import { createTestApp, TestApp } from './support/test-app';

/**
 * Every route's access declaration, reviewed as a permission change (docs/architecture.md#code-conventions, after
 * twenty's endpoint-permission-declarations test). A new route, or a changed @Public /
 * @RequirePermissions / @UseGuards, fails here until this table says so.
 *
 * "bearer + P" = the global Bearer guard and permission P (docs/api.md, "Roles and
 * permissions"); "bearer, any member" = @AnyMember(): the Bearer guard and no permission, any role
 * of the organization; "public" = @Public(), outside the Bearer guard. A route with none of these
 * reads "bearer, undeclared" and fails the second test.
 */
const DECLARED: Record<string, string> = {
  // Operations (docs/operations.md)
  'GET /healthz': 'public',
  'GET /readyz': 'public',
  'GET /.well-known/jwks.json': 'public',
  // Token exchange: outside the Bearer guard, behind its own ApiKey guard (docs/api.md#post-v1token)
  'POST /v1/token': 'public, guarded by ApiKeyGuard',
  // User API keys (docs/api.md)
  'POST /v1/user-api-keys': 'bearer + api_keys:create',
  'GET /v1/user-api-keys': 'bearer + api_keys:read',
  'GET /v1/user-api-keys/{id}': 'bearer + api_keys:read',
  'DELETE /v1/user-api-keys/{id}': 'bearer + api_keys:revoke',
  // Organization settings (docs/api.md#organization-settings): every member reads them, admins change them
  'GET /v1/organization': 'bearer, any member',
  'PATCH /v1/organization': 'bearer + organization:write',
  // Notification integrations (docs/integrations.md: reading needs integrations:read, validating and writing integrations:write)
  'POST /v1/notification-integrations/monitoring/validate': 'bearer + integrations:write',
  'POST /v1/notification-integrations': 'bearer + integrations:write',
  'GET /v1/notification-integrations': 'bearer + integrations:read',
  'GET /v1/notification-integrations/{id}': 'bearer + integrations:read',
  'PATCH /v1/notification-integrations/{id}': 'bearer + integrations:write',
  'DELETE /v1/notification-integrations/{id}': 'bearer + integrations:write',
};

/**
 * Routes the server answers that are not Nest controller routes (so no guard ever sees them): the
 * OpenAPI document and the Swagger UI, both public by nature (docs/operations.md). The UI's asset
 * routes belong to swagger-ui and are matched by their prefix.
 */
const OUTSIDE_NEST = ['GET /openapi.json', 'GET /docs'];
const OUTSIDE_NEST_PREFIXES = ['GET /docs/'];

describe('route permission declarations', () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  it('every controller route is declared exactly as in the table', () => {
    const found = nestRouteDeclarations(t.app);
    expect(Object.fromEntries(Object.entries(found).sort())).toStrictEqual(
      Object.fromEntries(Object.entries(DECLARED).sort()),
    );
  });

  it('no controller route is left without a permission, an explicit @AnyMember() or @Public()', () => {
    const undeclared = Object.entries(nestRouteDeclarations(t.app)).filter(([, access]) =>
      access.includes('undeclared'),
    );
    expect(undeclared).toEqual([]);
  });

  it('tells a route that declares nothing from an @AnyMember() one', () => {
    class Probe {
      @Get('nothing')
      nothing(): void {}

      @Get('members')
      @AnyMember()
      members(): void {}

      @Get('admins')
      @RequirePermissions('organization:write')
      admins(): void {}
    }
    const reflector = new Reflector();
    const access = (name: 'nothing' | 'members' | 'admins') => describeAccess(reflector, Probe.prototype[name], Probe);
    expect([access('nothing'), access('members'), access('admins')]).toEqual([
      'bearer, undeclared',
      'bearer, any member',
      'bearer + organization:write',
    ]);
  });

  it('the server answers no route besides the declared ones and the API documentation', () => {
    const outside = expressRoutes(t.app).filter((route) => !(route in DECLARED));
    const unexpected = outside.filter(
      (route) => !OUTSIDE_NEST.includes(route) && !OUTSIDE_NEST_PREFIXES.some((prefix) => route.startsWith(prefix)),
    );
    expect(unexpected).toEqual([]);
    // And every declared route is really served.
    expect(Object.keys(DECLARED).filter((route) => !expressRoutes(t.app).includes(route))).toEqual([]);
  });
});
