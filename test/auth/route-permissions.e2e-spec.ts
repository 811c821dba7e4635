import { Get } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import { AnyMember, RequirePermissions } from '../../src/identity/access.decorators';
import { PERMISSIONS } from '../../src/identity/roles';
import { bearer, expectError } from '../support/http-assertions';
import { describeAccess, expressRoutes, nestRouteDeclarations } from '../support/routes';
import { createTestApp, TestApp, TestUser } from '../support/test-app';

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
  // Resource servers and gateways (docs/resource-servers.md): RFC 8414 metadata; the client-credentials grant
  // authenticates the API key itself; introspection its resource server; forward auth reads the Bearer token it checks
  'GET /.well-known/oauth-authorization-server': 'public',
  'POST /oauth/token': 'public',
  'POST /oauth/introspect': 'public',
  'ALL /v1/forward-auth': 'public',
  // The revocation feed (docs/revocation-feed.md): its configuration is public; the streams and their polls
  // authenticate the resource server by its client credentials
  'GET /.well-known/ssf-configuration': 'public',
  'GET /ssf/stream': 'public',
  'POST /ssf/stream': 'public',
  'DELETE /ssf/stream': 'public',
  'POST /ssf/poll': 'public',
  'POST /ssf/poll/{streamId}': 'public',
  // Console sign-in: the one-time link's code is the credential (docs/api.md#post-v1consolesessions)
  'POST /v1/console/sessions': 'public',
  // Sign-out: the member in person, never an API key's access token (docs/api.md#delete-v1consolesessionscurrent)
  'DELETE /v1/console/sessions/current': 'bearer, any member, session token only',
  // User API keys (docs/api.md)
  'POST /v1/user-api-keys': 'bearer + api_keys:create',
  'GET /v1/user-api-keys': 'bearer + api_keys:read',
  'GET /v1/user-api-keys/{id}': 'bearer + api_keys:read',
  'DELETE /v1/user-api-keys/{id}': 'bearer + api_keys:revoke',
  // Rotation creates a key and may revoke the old one at once (grace 0): it needs both permissions
  'POST /v1/user-api-keys/{id}/rotate': 'bearer + api_keys:create + api_keys:revoke',
  // Organization key management (docs/api.md#organization-key-management): every member's keys, for admins
  'GET /v1/organization/api-keys': 'bearer + api_keys:manage',
  'DELETE /v1/organization/api-keys/{id}': 'bearer + api_keys:manage',
  // Organization settings (docs/api.md#organization-settings): every member reads them, admins change them
  'GET /v1/organization': 'bearer, any member',
  'PATCH /v1/organization': 'bearer + organization:write',
  // Reports of exposed keys: anyone may send one, at most EXPOSED_REPORTS_PER_HOUR per client address (docs/api.md#post-v1api-keysexposed)
  'POST /v1/api-keys/exposed': 'public, guarded by ExposedReportLimitGuard',
  // Audit log (docs/api.md#audit-events)
  'GET /v1/audit-events': 'bearer + audit:read',
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
    // And every declared route is really served (a route for every method is not listed by method).
    const served = expressRoutes(t.app);
    expect(Object.keys(DECLARED).filter((route) => !route.startsWith('ALL ') && !served.includes(route))).toEqual([]);
  });

  /**
   * An access token has its owner's role AND its key's and its own scopes (docs/api.md#scopes), checked
   * by the Bearer guard on every route: for every Bearer route of the table, an admin's token scoped
   * without the route's permission gets 403, and one scoped to exactly the route's permissions passes
   * the guard (whatever the route then answers for an unknown id or an empty body, it is not 401/403).
   */
  describe('scoped access tokens on every Bearer route', () => {
    let admin: TestUser;
    /** An admin's access token whose key has every permission but one. */
    const without = new Map<string, string>();
    beforeAll(async () => {
      admin = await t.user({ org: 'route-scopes', role: 'admin' });
      for (const permission of PERMISSIONS) {
        const scopes = PERMISSIONS.filter((other) => other !== permission);
        without.set(
          permission,
          await t.exchange((await t.createKey(admin, `without ${permission}`, { scopes })).value),
        );
      }
    });

    const bearerRoutes = Object.entries(DECLARED).filter(([, access]) => access.startsWith('bearer'));
    const call = (route: string, token: string) => {
      const [method, path] = route.split(' ');
      const url = path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-00000000beef');
      const request = t.http()[method.toLowerCase() as 'get' | 'post' | 'patch' | 'delete'](url).set(bearer(token));
      return method === 'GET' ? request : request.send({});
    };

    it.each(bearerRoutes)('%s (%s)', async (route, access) => {
      if (access.includes('session token only')) {
        // No access token passes, whatever its scopes: even one with every permission gets 403.
        const every = await t.exchange((await t.createKey(admin, `every scope for ${route}`)).value);
        expectError(await call(route, every), 403, 'PERMISSION_DENIED', 'insufficient permissions');
        // A session token passes (its own member's, signed out by the call: not the suite's admin).
        const member = await t.user({ org: 'route-scopes', role: 'member' });
        expect((await call(route, member.token)).status).toBe(204);
        return;
      }
      const required = access.startsWith('bearer + ') ? access.slice('bearer + '.length).split(' + ') : [];
      for (const permission of required) {
        expectError(await call(route, without.get(permission)!), 403, 'PERMISSION_DENIED', 'insufficient permissions');
      }
      const only = await t.exchange((await t.createKey(admin, `only for ${route}`, { scopes: required })).value);
      const allowed = await call(route, only);
      expect({ route, status: allowed.status }).not.toEqual({ route, status: 403 });
      expect({ route, status: allowed.status }).not.toEqual({ route, status: 401 });
      // The same permissions on the key, the token narrowed at the exchange to another one: 403 again.
      if (required.length > 0) {
        const other = PERMISSIONS.find((permission) => !required.includes(permission))!;
        const wide = await t.createKey(admin, `narrowed for ${route}`, { scopes: [...required, other] });
        const narrowed = await t.exchange(wide.value, { scope: other });
        expectError(await call(route, narrowed), 403, 'PERMISSION_DENIED', 'insufficient permissions');
      }
    });
  });
});
