import { Reflector } from '@nestjs/core';
import { ROUTE_ACCESS, RouteAccess } from '../../src/identity/access.decorators';
import { declaredRoutes } from '../support/routes';
import { createTestApp, TestApp } from '../support/test-app';

interface Operation {
  security?: Array<Record<string, string[]>>;
  responses: Record<string, { content?: Record<string, { schema: { $ref?: string } }> }>;
}

function routesOf(t: TestApp): Array<{ route: string; access: RouteAccess }> {
  const reflector = new Reflector();
  return declaredRoutes(t).map(({ route, handler, controller }) => ({
    route,
    access: reflector.getAllAndOverride<RouteAccess>(ROUTE_ACCESS, [handler, controller]),
  }));
}

describe('OpenAPI document', () => {
  let t: TestApp;
  let document: { paths: Record<string, Record<string, Operation>>; components: { securitySchemes: object } };

  beforeAll(async () => {
    t = await createTestApp();
    document = (await t.http().get('/openapi.json').expect(200).expect('Content-Type', /json/)).body;
  });
  afterAll(() => t.close());

  it('declares the four security schemes', () => {
    expect(document.components.securitySchemes).toEqual({
      bearer: expect.objectContaining({ type: 'http', scheme: 'bearer', bearerFormat: 'JWT' }),
      apiKey: expect.objectContaining({ type: 'apiKey', in: 'header', name: 'Authorization' }),
      apiKeyClient: expect.objectContaining({ type: 'http', scheme: 'basic' }),
      resourceServer: expect.objectContaining({ type: 'http', scheme: 'basic' }),
    });
  });

  it('documents every route the app serves, with the security its @Authenticated declares and its error bodies', () => {
    const routes = routesOf(t);
    expect(routes.length).toBeGreaterThanOrEqual(6);
    for (const { route, access } of routes) {
      const [method, path] = route.split(' ');
      // A route for every method (forward auth) is documented under each; GET stands for them.
      const operation = document.paths[path]?.[method === 'ALL' ? 'get' : method.toLowerCase()];
      expect({ route, documented: operation !== undefined }).toEqual({ route, documented: true });
      const security = (operation.security ?? []).flatMap((s) => Object.keys(s));
      if (access.kind === 'scheme') {
        const { securityScheme } = access.scheme;
        expect({ route, security }).toEqual({ route, security: securityScheme === null ? [] : [securityScheme] });
      } else if (access.kind === 'public') expect({ route, security }).toEqual({ route, security: [] });
      else {
        expect({ route, security }).toEqual({ route, security: ['bearer'] });
        expect({ route, has401: '401' in operation.responses }).toEqual({ route, has401: true });
      }
      for (const [status, response] of Object.entries(operation.responses)) {
        if (Number(status) < 400) continue;
        // A page for a person, not a body for a client (GET /oauth/authorize before the redirect URI is known).
        if (response.content?.['text/html'] !== undefined) continue;
        const ref = response.content?.['application/json']?.schema.$ref;
        // The OAuth endpoints answer in RFC 6749's shape (docs/resource-servers.md#errors).
        const body = path.startsWith('/oauth/') ? 'OAuthErrorBody' : 'ErrorBody';
        expect({ route, status, ref }).toEqual({ route, status, ref: `#/components/schemas/${body}` });
      }
    }
  });

  it("documents the usage fields of a key record and the organization list's user_id filter", async () => {
    const full = (await t.http().get('/openapi.json').expect(200)).body as {
      components: { schemas: Record<string, { properties: Record<string, Record<string, unknown>> }> };
      paths: Record<string, Record<string, { parameters: Array<{ name: string; schema: Record<string, unknown> }> }>>;
    };
    const properties = full.components.schemas.ApiKeyView.properties;
    expect(properties.last_used_ip).toMatchObject({ type: 'string', nullable: true, maxLength: 45 });
    expect(properties.last_used_user_agent).toMatchObject({ type: 'string', nullable: true, maxLength: 255 });
    const parameters = full.paths['/v1/organization/api-keys'].get.parameters;
    expect(parameters.map((parameter) => parameter.name).sort()).toEqual([
      'email',
      'include_revoked',
      'limit',
      'page',
      'user_id',
    ]);
    expect(parameters.find((parameter) => parameter.name === 'user_id')?.schema).toMatchObject({ format: 'uuid' });
  });

  it('serves the interactive documentation at /docs, with the security headers of the console', async () => {
    const page = await t.http().get('/docs').redirects(1).expect(200);
    expect(page.text).toContain('swagger');
    for (const path of ['/docs', '/docs/swagger-ui-init.js', '/docs/swagger-ui.css']) {
      const answer = await t.http().get(path).expect(200);
      expect({ path, headers: answer.headers }).toMatchObject({
        path,
        headers: {
          'content-security-policy': expect.stringContaining("frame-ancestors 'none'"),
          'x-frame-options': 'DENY',
          'x-content-type-options': 'nosniff',
          'referrer-policy': 'no-referrer',
        },
      });
      // Scripts from this origin only: no inline script, no eval.
      expect(answer.headers['content-security-policy']).toContain("script-src 'self';");
      expect(answer.headers['content-security-policy']).not.toMatch(/script-src[^;]*unsafe/);
    }
  });
});
