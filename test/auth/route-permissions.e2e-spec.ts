import { Get } from '@nestjs/common';
import { ROUTE_ARGS_METADATA } from '@nestjs/common/constants';
import { RouteParamtypes } from '@nestjs/common/enums/route-paramtypes.enum';
import { StrictValidationPipe } from '../../src/common/validation.pipe';
import { Reflector } from '@nestjs/core';
import { Authenticated, Public } from '../../src/identity/access.decorators';
import { ApiKeyGuard } from '../../src/auth/api-key.guard';
import { PERMISSIONS } from '../../src/identity/roles';
import { bearer, expectError } from '../support/http-assertions';
import { declaredRoutes, describeAccess, expressRoutes, nestRouteDeclarations } from '../support/routes';
import { createTestApp, TestApp, TestUser } from '../support/test-app';

/**
 * Every route's access declaration, reviewed as a permission change (docs/architecture.md#authentication, after
 * twenty's endpoint-permission-declarations test). A new route, or a changed @Public / @Authenticated / @UseGuards,
 * fails here until this table says so.
 *
 * "bearer + P" = @Authenticated({ permissions: [P] }): a Bearer token and permission P (docs/api.md, "Roles and
 * permissions"); "bearer, any member" = @Authenticated({ anyMember: true }): a Bearer token, no permission, any role
 * of the organization; a guard's name = @Authenticated(ThatGuard), another scheme; "public" = @Public(), no credential
 * at all. A route with none of these reads "undeclared", and every call of it is refused.
 */
const DECLARED: Record<string, string> = {
  // Operations (docs/operations.md)
  'GET /healthz': 'public',
  'GET /readyz': 'public',
  'GET /.well-known/jwks.json': 'public',
  // Token exchange: the ApiKey scheme (docs/api.md#post-v1token)
  'POST /v1/token': 'ApiKeyGuard',
  // Resource servers and gateways (docs/resource-servers.md): RFC 8414 metadata; the client-credentials grant
  // authenticates the API key as the client; introspection its resource server; forward auth the Bearer token it checks
  'GET /.well-known/oauth-authorization-server': 'public',
  'POST /oauth/token': 'OAuthGrantGuard',
  'POST /oauth/introspect': 'ResourceServerGuard',
  'ALL /v1/forward-auth': 'GatewayTokenGuard',
  // The authorization code grant (docs/mcp.md): the authorization endpoint takes no credential (its refusals are a
  // page or a redirect to the client); the consent page decides with the person's session token, never an API key's
  // access token; grants are the person's credentials (their keys' permissions), an organization's for its admins
  'GET /oauth/authorize': 'public',
  'GET /v1/oauth/consent': 'bearer, any member, session token only',
  'POST /v1/oauth/consent': 'bearer, any member, session token only',
  'GET /v1/grants': 'bearer + api_keys:read',
  'DELETE /v1/grants/{id}': 'bearer + api_keys:revoke',
  'GET /v1/organization/grants': 'bearer + api_keys:manage',
  'DELETE /v1/organization/grants/{id}': 'bearer + api_keys:manage',
  // Clients (docs/mcp.md#clients): dynamic registration is open to anyone while on, a few per address an hour; an
  // organization's own clients are its admins'
  'POST /oauth/register': 'public, guarded by RegistrationLimitGuard',
  'GET /v1/organization/oauth-clients': 'bearer + organization:write',
  'POST /v1/organization/oauth-clients': 'bearer + organization:write',
  'DELETE /v1/organization/oauth-clients/{id}': 'bearer + organization:write',
  // The revocation feed (docs/revocation-feed.md): its configuration is public; the streams and their polls
  // authenticate the resource server by its client credentials
  'GET /.well-known/ssf-configuration': 'public',
  'GET /ssf/stream': 'ResourceServerGuard',
  'POST /ssf/stream': 'ResourceServerGuard',
  'DELETE /ssf/stream': 'ResourceServerGuard',
  'POST /ssf/poll': 'ResourceServerGuard',
  'POST /ssf/poll/{streamId}': 'ResourceServerGuard',
  // Console sign-in: the one-time link's code is the credential (docs/api.md#post-v1consolesessions)
  'POST /v1/console/sessions': 'SignInLinkGuard',
  // Sign-out: the member in person, never an API key's access token (docs/api.md#delete-v1consolesessionscurrent)
  'DELETE /v1/console/sessions/current': 'bearer, any member, session token only',
  // An admin's invitation: the code of its one-time link is the credential (docs/api.md#post-v1consoleinvitationsaccept)
  'POST /v1/console/invitations/accept': 'InvitationGuard',
  // Console single sign-on (docs/api.md#get-v1consolesso): the start takes no credential; the identity provider's
  // redirect back carries its code and state, with the browser's binding cookie, at the shared redirect URI (a
  // provider that sends RFC 9207's `iss`) or the organization's (one that does not), both checked by the same guard
  // (docs/api.md#get-v1consolessocallback)
  'GET /v1/console/sso': 'public',
  'GET /v1/console/sso/callback': 'SsoCallbackGuard',
  'GET /v1/console/sso/callback/{organization}': 'SsoCallbackGuard',
  // User API keys (docs/api.md)
  'POST /v1/user-api-keys': 'bearer + api_keys:create',
  'GET /v1/user-api-keys': 'bearer + api_keys:read',
  'GET /v1/user-api-keys/{id}': 'bearer + api_keys:read',
  'DELETE /v1/user-api-keys/{id}': 'bearer + api_keys:revoke',
  // Changing a key's label, allowlist or rate limit loosens or tightens what it may do: who may create keys
  'PATCH /v1/user-api-keys/{id}': 'bearer + api_keys:create',
  // Rotation creates a key and may revoke the old one at once (grace 0): it needs both permissions
  'POST /v1/user-api-keys/{id}/rotate': 'bearer + api_keys:create + api_keys:revoke',
  // Organization key management (docs/api.md#organization-key-management): every member's keys, for admins
  'GET /v1/organization/api-keys': 'bearer + api_keys:manage',
  'DELETE /v1/organization/api-keys/{id}': 'bearer + api_keys:manage',
  // Usage over time (docs/api.md#usage-over-time): a credential's, as its read is (the owner) and its organization's
  // list is (admins); the busiest of every kind need the management of both kinds
  'GET /v1/user-api-keys/{id}/usage': 'bearer + api_keys:read',
  'GET /v1/organization/api-keys/{id}/usage': 'bearer + api_keys:manage',
  'GET /v1/workload-identities/{id}/usage': 'bearer + workload_identities:read',
  'GET /v1/organization/workload-identities/{id}/usage': 'bearer + workload_identities:manage',
  'GET /v1/organization/usage/top': 'bearer + api_keys:manage + workload_identities:manage',
  // Who revoked a credential (docs/api.md#who-revoked-a-credential), and an organization's one credential, for admins
  'GET /v1/user-api-keys/{id}/revoked-by': 'bearer + api_keys:read',
  'GET /v1/organization/api-keys/{id}': 'bearer + api_keys:manage',
  'GET /v1/organization/api-keys/{id}/revoked-by': 'bearer + api_keys:manage',
  'GET /v1/workload-identities/{id}/revoked-by': 'bearer + workload_identities:read',
  'GET /v1/organization/workload-identities/{id}': 'bearer + workload_identities:manage',
  'GET /v1/organization/workload-identities/{id}/revoked-by': 'bearer + workload_identities:manage',
  // Organization settings (docs/api.md#organization-settings): every member reads them, admins change them
  'GET /v1/organization': 'bearer, any member',
  'PATCH /v1/organization': 'bearer + organization:write',
  // Members and invitations (docs/api.md#members): permissions of their own, an admin's (reading is separate from
  // changing, as for webhooks); the rules are the admin CLI's (one MembersService)
  'GET /v1/organization/members': 'bearer + members:read',
  'PATCH /v1/organization/members/{id}': 'bearer + members:write',
  'DELETE /v1/organization/members/{id}': 'bearer + members:write',
  'GET /v1/organization/members/invitations': 'bearer + members:read',
  'POST /v1/organization/members/invitations': 'bearer + members:write',
  'DELETE /v1/organization/members/invitations/{id}': 'bearer + members:write',
  // Single sign-on set-up (docs/api.md#single-sign-on-set-up): the organization's people issuer is one of its
  // settings, an admin's as PATCH /v1/organization is; the test of the connection too (it fetches from an address the
  // admin gives)
  'GET /v1/organization/single-sign-on': 'bearer + organization:write',
  'PUT /v1/organization/single-sign-on': 'bearer + organization:write',
  'DELETE /v1/organization/single-sign-on': 'bearer + organization:write',
  'POST /v1/organization/single-sign-on/test': 'bearer + organization:write',
  'PUT /v1/organization/single-sign-on/allowed-origins': 'bearer + organization:write',
  // Reports of exposed keys: anyone may send one, at most EXPOSED_REPORTS_PER_HOUR per client address (docs/api.md#post-v1api-keysexposed)
  'POST /v1/api-keys/exposed': 'public, guarded by ExposedReportLimitGuard',
  // Audit log (docs/api.md#audit-events)
  'GET /v1/audit-events': 'bearer + audit:read',
  // Its export reads the same events (the same filters, a bounded range): who may read the log may download it
  'GET /v1/audit-events/export': 'bearer + audit:read',
  // Notification integrations (docs/integrations.md: reading needs integrations:read, validating and writing integrations:write)
  'POST /v1/notification-integrations/monitoring/validate': 'bearer + integrations:write',
  'POST /v1/notification-integrations': 'bearer + integrations:write',
  'GET /v1/notification-integrations': 'bearer + integrations:read',
  'GET /v1/notification-integrations/{id}': 'bearer + integrations:read',
  'PATCH /v1/notification-integrations/{id}': 'bearer + integrations:write',
  'DELETE /v1/notification-integrations/{id}': 'bearer + integrations:write',
  // Signed webhooks (docs/webhooks.md#managing-endpoints): the organization's endpoints; reading them needs
  // webhooks:read, every change webhooks:write (both an admin's, as api_keys:manage was before them)
  'POST /v1/organization/webhooks': 'bearer + webhooks:write',
  'GET /v1/organization/webhooks': 'bearer + webhooks:read',
  'DELETE /v1/organization/webhooks/{id}': 'bearer + webhooks:write',
  'GET /v1/organization/webhooks/{id}/deliveries': 'bearer + webhooks:read',
  // Enabling a disabled endpoint again is an admin's, as adding and deleting one (docs/webhooks.md#disabled-endpoints).
  'POST /v1/organization/webhooks/{id}/enable': 'bearer + webhooks:write',
  'POST /v1/organization/webhooks/{id}/test': 'bearer + webhooks:write',
  // A delivery's body and the receiver's answer are read as the log is; a resend sends, as a test does; a rotation
  // changes the endpoint's secret, as adding one makes it (docs/webhooks.md#resending, #rotating-the-secret)
  'GET /v1/organization/webhooks/{id}/deliveries/{deliveryId}': 'bearer + webhooks:read',
  'POST /v1/organization/webhooks/{id}/deliveries/{deliveryId}/resend': 'bearer + webhooks:write',
  'POST /v1/organization/webhooks/{id}/rotate-secret': 'bearer + webhooks:write',
  // Workload identities (docs/workload-identities.md): keys without secrets, permissions of their own that mirror the
  // keys' (each role holds the same of both); the issuers an identity may name are read by whoever may create one
  'POST /v1/workload-identities': 'bearer + workload_identities:create',
  'GET /v1/workload-identities': 'bearer + workload_identities:read',
  'GET /v1/workload-identities/trusted-issuers': 'bearer + workload_identities:create',
  'GET /v1/workload-identities/{id}': 'bearer + workload_identities:read',
  'DELETE /v1/workload-identities/{id}': 'bearer + workload_identities:revoke',
  'GET /v1/organization/workload-identities': 'bearer + workload_identities:manage',
  'DELETE /v1/organization/workload-identities/{id}': 'bearer + workload_identities:manage',
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
    // Three keys of one admin for each Bearer route and one for each permission: past the default 100 active keys.
    t = await createTestApp({ env: { API_KEY_MAX_ACTIVE_PER_USER: '1000' } });
  });
  afterAll(() => t.close());

  it('every controller route is declared exactly as in the table', () => {
    const found = nestRouteDeclarations(t.app);
    expect(Object.fromEntries(Object.entries(found).sort())).toStrictEqual(
      Object.fromEntries(Object.entries(DECLARED).sort()),
    );
  });

  it('checks every body and query strictly: each names StrictValidationPipe (@ValidBody, @ValidQuery), no global pipe', () => {
    const inputs = declaredRoutes(t.app).flatMap(({ route, handler, controller }) => {
      const args = (Reflect.getMetadata(ROUTE_ARGS_METADATA, controller, handler.name) ?? {}) as Record<
        string,
        { pipes?: unknown[] }
      >;
      return Object.entries(args)
        .filter(([key]) => [RouteParamtypes.BODY, RouteParamtypes.QUERY].includes(Number(key.split(':')[0])))
        .map(([key, arg]) => ({
          input: `${route} ${key}`,
          strict: (arg.pipes ?? []).some((pipe) => pipe instanceof StrictValidationPipe),
        }));
    });
    expect(inputs.length).toBeGreaterThan(30);
    expect(inputs.filter(({ strict }) => !strict).map(({ input }) => input)).toEqual([]);
  });

  it('no controller route is left without an @Authenticated or @Public declaration', () => {
    const undeclared = Object.entries(nestRouteDeclarations(t.app)).filter(([, access]) =>
      access.includes('undeclared'),
    );
    expect(undeclared).toEqual([]);
  });

  it('tells each declaration apart, a route that declares nothing included', () => {
    class Probe {
      @Get('nothing')
      nothing(): void {}

      @Get('open')
      @Public()
      open(): void {}

      @Get('members')
      @Authenticated({ anyMember: true })
      members(): void {}

      @Get('admins')
      @Authenticated({ permissions: ['organization:write'] })
      admins(): void {}

      @Get('exchange')
      @Authenticated(ApiKeyGuard)
      exchange(): void {}
    }
    const reflector = new Reflector();
    const names = ['nothing', 'open', 'members', 'admins', 'exchange'] as const;
    expect(names.map((name) => describeAccess(reflector, Probe.prototype[name], Probe))).toEqual([
      'undeclared',
      'public',
      'bearer, any member',
      'bearer + organization:write',
      'ApiKeyGuard',
    ]);
  });

  it('refuses a declaration that names neither permissions nor any member, or both', () => {
    expect(() => Authenticated({})).toThrow('@Authenticated: name the permissions, or anyMember, or sessionOnly');
    expect(() => Authenticated({ permissions: ['api_keys:read'], anyMember: true })).toThrow('@Authenticated');
  });

  /**
   * Every route that takes a credential refuses a request without one with 401, whatever its scheme, and every public
   * route answers without one: the declaration is what the server does, not only what the table says.
   */
  describe('without a credential', () => {
    const send = (route: string) => {
      const [method, path] = route.split(' ');
      const url = path.replace(/\{[^}]+\}/g, '00000000-0000-4000-8000-00000000beef');
      const verb = (method === 'ALL' ? 'get' : method.toLowerCase()) as 'get' | 'post' | 'patch' | 'delete';
      const request = t.http()[verb](url);
      // The OAuth endpoints read a form; the token endpoint its grant first (an unsupported one is 400 before).
      if (path.startsWith('/oauth/')) return request.type('form').send({ grant_type: 'client_credentials' });
      // The sign-in link's credential is its code, in the body: one nobody issued.
      if (route === 'POST /v1/console/sessions' || route === 'POST /v1/console/invitations/accept') {
        return request.send({ code: 'A'.repeat(43) });
      }
      return verb === 'get' ? request : request.send({});
    };
    it.each(Object.entries(DECLARED).filter(([, access]) => access !== 'public' && !access.startsWith('public,')))(
      '%s (%s): 401',
      async (route) => {
        const answer = await send(route);
        expect({ route, status: answer.status }).toEqual({ route, status: 401 });
        expect({ route, challenge: answer.headers['www-authenticate'] ?? null }).toEqual({
          route,
          // RFC 6749 section 5.2: the OAuth endpoints challenge only a client that tried the Authorization header.
          challenge: route.split(' ')[1].startsWith('/oauth/')
            ? null
            : expect.stringMatching(/^(Bearer|Basic|ApiKey|SignInLink) realm="gatehouse"/),
        });
      },
    );
    it.each(Object.entries(DECLARED).filter(([, access]) => access === 'public' || access.startsWith('public,')))(
      '%s (%s): answered',
      async (route) => {
        const answer = await send(route);
        expect({ route, status: answer.status }).not.toEqual({ route, status: 401 });
        expect({ route, status: answer.status }).not.toEqual({ route, status: 500 });
      },
    );
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
        expectError(
          await call(route, every),
          403,
          'PERMISSION_DENIED',
          'insufficient permissions',
          'session_token_required',
        );
        // A session token passes (its own member's, signed out by the call: not the suite's admin); the consent page's
        // routes then refuse the empty request (400), past the guard.
        const member = await t.user({ org: 'route-scopes', role: 'member' });
        expect((await call(route, member.token)).status).toBe(route.includes('/v1/oauth/consent') ? 400 : 204);
        return;
      }
      const required = access.startsWith('bearer + ') ? access.slice('bearer + '.length).split(' + ') : [];
      for (const permission of required) {
        expectError(
          await call(route, without.get(permission)!),
          403,
          'PERMISSION_DENIED',
          'insufficient permissions',
          'insufficient_permissions',
        );
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
        expectError(
          await call(route, narrowed),
          403,
          'PERMISSION_DENIED',
          'insufficient permissions',
          'insufficient_permissions',
        );
      }
    });
  });
});
