import assert from 'node:assert/strict';
import { once } from 'node:events';
import { createServer, Server } from 'node:http';
import { AddressInfo } from 'node:net';
import { after, before, describe, it } from 'node:test';
import { createVerifier, resourceMetadata, Verifier, VerifierOptions } from '../src/index';
import { gatehouse, protectedResource, RequiredScopes } from '../src/express';
import { authorize, serveResourceMetadata } from '../src/http';
import { AUDIENCE, CLIENT_ID, CLIENT_SECRET, FakeGatehouse, TOKEN_CLAIMS_CHANGE, until } from './fake-gatehouse';

/** A request as Express hands it on after express.json(). */
type TestRequest = { headers: { authorization?: string }; body: { method: string } };

const MCP_AUDIENCE = 'https://notes.example.com/mcp';
const METADATA_URL = 'https://notes.example.com/.well-known/oauth-protected-resource/mcp';

const options = (gh: FakeGatehouse, more: Partial<VerifierOptions> = {}): VerifierOptions => ({
  issuer: gh.issuer,
  audience: MCP_AUDIENCE,
  clientId: CLIENT_ID,
  clientSecret: CLIENT_SECRET,
  maxStalenessSeconds: 1,
  ...more,
});

void describe('RFC 9728 metadata', () => {
  void it('names the issuer, the resource, its scopes and the header method; its URL inserts the well-known segment', () => {
    const metadata = resourceMetadata('https://gatehouse.example.com', MCP_AUDIENCE, {
      scopes: ['tools:read', 'tools:write'],
      resourceName: 'Notes',
    });
    assert.deepEqual(metadata.document, {
      resource: MCP_AUDIENCE,
      authorization_servers: ['https://gatehouse.example.com'],
      bearer_methods_supported: ['header'],
      scopes_supported: ['tools:read', 'tools:write'],
      resource_name: 'Notes',
    });
    assert.equal(metadata.url, METADATA_URL);
    assert.deepEqual(metadata.paths, [
      '/.well-known/oauth-protected-resource/mcp',
      '/.well-known/oauth-protected-resource',
    ]);
  });

  void it('has one path for a resource at the root (with or without its slash), and no scopes_supported without scopes', () => {
    for (const audience of ['https://orders.example.com', 'https://orders.example.com/']) {
      const metadata = resourceMetadata('https://gh.example.com', audience);
      assert.equal(metadata.url, 'https://orders.example.com/.well-known/oauth-protected-resource');
      assert.deepEqual(metadata.paths, ['/.well-known/oauth-protected-resource']);
      assert.equal('scopes_supported' in metadata.document, false);
      assert.equal(metadata.document.resource, audience);
    }
  });
});

void describe('challenges and metadata routes', () => {
  const gh = new FakeGatehouse();
  /** The same fake for a verifier of the default audience, without metadata (as before). */
  const orders = new FakeGatehouse();
  let verifier: Verifier;
  let plain: Verifier;

  before(async () => {
    gh.audience = MCP_AUDIENCE;
    await gh.start();
    await orders.start();
    gh.scopesSupported = ['api_keys:read', 'api_keys:create'];
    verifier = await createVerifier(options(gh, { resourceMetadata: { scopes: ['tools:read', 'tools:write'] } }));
    plain = await createVerifier({ ...options(orders), audience: AUDIENCE });
  });
  after(async () => {
    await verifier.close();
    await plain.close();
    gh.stop();
    orders.stop();
  });

  /** Runs the Express middleware on a minimal request: what it answered, or that it let the request on. */
  async function express(v: Verifier, authorization: string | undefined, scopes: RequiredScopes<TestRequest>) {
    let answered: (passed: boolean) => void = () => undefined;
    const outcome = new Promise<boolean>((resolve) => (answered = resolve));
    const res = {
      code: 0,
      headers: {} as Record<string, string>,
      body: undefined as unknown,
      status(c: number) {
        this.code = c;
        return this;
      },
      set(h: Record<string, string>) {
        Object.assign(this.headers, h);
        return this;
      },
      json(body: unknown) {
        this.body = body;
        answered(false);
        return this;
      },
    };
    const req: TestRequest = { headers: { authorization }, body: { method: 'tools/call' } };
    gatehouse<TestRequest>(v, scopes)(req, res, () => answered(true));
    const passed = await outcome;
    return { passed, code: res.code, challenge: res.headers['WWW-Authenticate'], body: res.body };
  }

  void it('401 without a token names the metadata and no error; a bad token adds invalid_token', async () => {
    assert.deepEqual(await express(verifier, undefined, []), {
      passed: false,
      code: 401,
      challenge: `Bearer realm="gatehouse", resource_metadata="${METADATA_URL}"`,
      body: { code: 'invalid_token', message: 'no Bearer token' },
    });
    const bad = await express(verifier, 'Bearer nope', []);
    assert.equal(bad.challenge, `Bearer realm="gatehouse", error="invalid_token", resource_metadata="${METADATA_URL}"`);
  });

  void it('403 insufficient_scope names the scope to ask for (scopes read from the request) and the metadata', async () => {
    const token = await gh.token({ scope: 'tools:read' }, {});
    assert.equal((await express(verifier, `Bearer ${token}`, ['tools:read'])).passed, true);
    const needs = (req: TestRequest) =>
      req.body.method === 'tools/call' ? ['tools:read', 'tools:write'] : ['tools:read'];
    const refused = await express(verifier, `Bearer ${token}`, needs);
    assert.equal(refused.code, 403);
    assert.equal(
      refused.challenge,
      `Bearer realm="gatehouse", error="insufficient_scope", scope="tools:read tools:write", ` +
        `resource_metadata="${METADATA_URL}"`,
    );
  });

  void it('a verifier without resourceMetadata answers as before: no resource_metadata', async () => {
    assert.equal(plain.resourceMetadata, undefined);
    assert.equal((await express(plain, undefined, [])).challenge, 'Bearer realm="gatehouse"');
    const token = await orders.token();
    assert.equal(
      (await express(plain, `Bearer ${token}`, ['orders:admin'])).challenge,
      'Bearer realm="gatehouse", error="insufficient_scope", scope="orders:admin"',
    );
    assert.throws(() => protectedResource(plain), /resourceMetadata/);
  });

  void it("a role change narrows Gatehouse's permissions only, not the resource server's own scopes", async () => {
    const token = await gh.token({ sub: 'user-9', scope: 'api_keys:read api_keys:create tools:read' }, {});
    await gh.publish(
      'set-role-9',
      { format: 'iss_sub', iss: gh.issuer, sub: 'user-9' },
      { [TOKEN_CLAIMS_CHANGE]: { claims: { org: 'org-1', scope: 'api_keys:read' } } },
    );
    await until(async () => (await verifier.verify(token)).scopes.length === 2);
    assert.deepEqual((await verifier.verify(token)).scopes, ['api_keys:read', 'tools:read']);
  });

  void it('node:http: serves the metadata at both paths, answers refusals, and lets a verified request on', async () => {
    const server: Server = createServer((req, res) => {
      if (serveResourceMetadata(verifier, req, res)) return;
      void authorize(verifier, req, res, ['tools:read']).then((access) => {
        if (access === undefined) return;
        res.writeHead(200, { 'Content-Type': 'application/json' }).end(JSON.stringify(access));
      });
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
        const response = await fetch(`${base}${path}`);
        assert.equal(response.status, 200);
        assert.equal(response.headers.get('access-control-allow-origin'), '*');
        assert.deepEqual(await response.json(), verifier.resourceMetadata!.document);
      }
      const refused = await fetch(`${base}/mcp`, { method: 'POST' });
      assert.equal(refused.status, 401);
      assert.equal(
        refused.headers.get('www-authenticate'),
        `Bearer realm="gatehouse", resource_metadata="${METADATA_URL}"`,
      );
      const token = await gh.token({ scope: 'tools:read' }, {});
      const allowed = await fetch(`${base}/mcp`, { method: 'POST', headers: { Authorization: `Bearer ${token}` } });
      assert.equal(allowed.status, 200);
      assert.deepEqual(((await allowed.json()) as { scopes: string[] }).scopes, ['tools:read']);
    } finally {
      server.close();
    }
  });

  void it('Express: protectedResource answers GET of its paths and passes anything else on', () => {
    const middleware = protectedResource(verifier);
    const answered: unknown[] = [];
    const res = {
      headers: {} as Record<string, string>,
      status: () => res,
      set: (h: Record<string, string>) => (Object.assign(res.headers, h), res),
      json: (body: unknown) => answered.push(body),
    };
    let nexts = 0;
    middleware({ headers: {}, method: 'GET', path: '/.well-known/oauth-protected-resource/mcp' }, res, () => nexts++);
    middleware({ headers: {}, method: 'POST', path: '/.well-known/oauth-protected-resource/mcp' }, res, () => nexts++);
    middleware({ headers: {}, method: 'GET', path: '/mcp' }, res, () => nexts++);
    assert.deepEqual(answered, [verifier.resourceMetadata!.document]);
    assert.equal(nexts, 2);
    assert.equal(res.headers['Content-Type'], 'application/json');
  });
});
