import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { ClientCredentialsProvider } from '@modelcontextprotocol/sdk/client/auth-extensions.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { decodeJwt } from '../support/http-assertions';
import { McpServerProcess } from '../support/mcp-server-process';
import { freePort } from '../support/ports';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { waitFor } from '../support/wait';

/**
 * A headless agent and a real MCP server (docs/mcp.md): examples/mcp-server in a process of its own, protected by the
 * verifier, and the MCP SDK's client with its client-credentials provider and an API key as the client secret. The
 * SDK finds Gatehouse from the server's 401 (RFC 9728, then RFC 8414), gets a token with `resource`, lists and calls
 * tools; a tool needing a scope the token lacks is 403 insufficient_scope; a revoked key is refused within 1 s.
 */
const SCOPES = [
  { name: 'tools:read', description: 'List and call read-only tools' },
  { name: 'tools:write', description: 'Call tools that change notes' },
];
const FORM = 'application/x-www-form-urlencoded';
const basic = (id: string, secret: string): string =>
  `Basic ${Buffer.from(`${encodeURIComponent(id)}:${encodeURIComponent(secret)}`).toString('base64')}`;

type Key = { id: string; value: string };

describe(`an MCP server protected by Gatehouse, an agent with an API key, on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let issuer: string;
  let audience: string;
  let server: McpServerProcess;
  let member: TestUser;
  const clients: Client[] = [];

  beforeAll(async () => {
    const gatehousePort = await freePort();
    issuer = `http://127.0.0.1:${gatehousePort}`;
    t = await createTestApp({ env: { JWT_ISSUER: issuer, PUBLIC_BASE_URL: issuer } });
    await t.app.listen(gatehousePort, '127.0.0.1');
    audience = `http://127.0.0.1:${await freePort()}/mcp`;
    const { clientId, clientSecret } = await t.get(ResourceServersService).register('Notes', audience, SCOPES);
    server = await McpServerProcess.start({ issuer, audience, clientId, clientSecret });
    member = await t.user({ org: 'mcp-agents', role: 'member' });
  }, 60_000);

  afterAll(async () => {
    for (const client of clients) await client.close();
    await server?.stop();
    await t?.close();
  });

  /** The SDK's client for this key, asking for `scope`: it connects (discovery and token) on the first request. */
  async function connect(key: Key, scope: string): Promise<{ client: Client; provider: ClientCredentialsProvider }> {
    const provider = new ClientCredentialsProvider({
      clientId: key.id,
      clientSecret: key.value,
      expectedIssuer: issuer,
      scope,
    });
    const client = new Client({ name: 'gatehouse-test-agent', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(audience), { authProvider: provider }));
    clients.push(client);
    return { client, provider };
  }

  const text = (result: unknown): string => (result as { content: Array<{ text: string }> }).content[0].text;

  /** A JSON-RPC tools/call straight to the server, with a token: what a client sees, headers included. */
  const callTool = (token: string | undefined, name: string, args: Record<string, unknown> = {}) =>
    fetch(audience, {
      method: 'POST',
      headers: {
        'Content-Type': 'application/json',
        Accept: 'application/json, text/event-stream',
        ...(token === undefined ? {} : { Authorization: `Bearer ${token}` }),
      },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
    });

  const token = (form: Record<string, string>, key: Key) =>
    t
      .http()
      .post('/oauth/token')
      .type(FORM)
      .set('Authorization', basic(key.id, key.value))
      .send(new URLSearchParams({ grant_type: 'client_credentials', ...form }).toString());

  const metadataUrl = (): string => `${new URL(audience).origin}/.well-known/oauth-protected-resource/mcp`;

  it('serves RFC 9728 metadata at the path-suffixed and the root well-known paths', async () => {
    const expected = {
      resource: audience,
      authorization_servers: [issuer],
      scopes_supported: ['tools:read', 'tools:write'],
      bearer_methods_supported: ['header'],
      resource_name: 'Gatehouse example notes',
    };
    for (const url of [metadataUrl(), `${new URL(audience).origin}/.well-known/oauth-protected-resource`]) {
      const response = await fetch(url);
      expect({ status: response.status, body: await response.json() }).toEqual({ status: 200, body: expected });
      expect(response.headers.get('access-control-allow-origin')).toBe('*');
    }
  });

  it('answers a request without a token 401 naming the metadata, and a token for another audience 401 invalid_token', async () => {
    const none = await callTool(undefined, 'list_notes');
    expect(none.status).toBe(401);
    expect(none.headers.get('www-authenticate')).toBe(`Bearer realm="gatehouse", resource_metadata="${metadataUrl()}"`);
    const key = await t.createKey(member, 'other-audience');
    const gatehouseToken = await t.exchange(key.value);
    const other = await callTool(gatehouseToken, 'list_notes');
    expect(other.status).toBe(401);
    expect(other.headers.get('www-authenticate')).toBe(
      `Bearer realm="gatehouse", error="invalid_token", resource_metadata="${metadataUrl()}"`,
    );
  });

  it("follows the SDK's steps: the 401's resource_metadata, RFC 9728, RFC 8414, a token with resource, a call", async () => {
    const key = await t.createKey(member, 'agent-by-hand');
    const challenge = (await callTool(undefined, 'list_notes')).headers.get('www-authenticate')!;
    const resourceMetadata = /resource_metadata="([^"]+)"/.exec(challenge)![1];
    const resource = (await (await fetch(resourceMetadata)).json()) as {
      resource: string;
      authorization_servers: string[];
    };
    const [authorizationServer] = resource.authorization_servers;
    const metadata = (await (await fetch(`${authorizationServer}/.well-known/oauth-authorization-server`)).json()) as {
      issuer: string;
      token_endpoint: string;
    };
    expect(metadata.issuer).toBe(issuer);
    const answer = await fetch(metadata.token_endpoint, {
      method: 'POST',
      headers: { 'Content-Type': FORM, Authorization: basic(key.id, key.value) },
      body: new URLSearchParams({ grant_type: 'client_credentials', scope: 'tools:read', resource: resource.resource }),
    });
    const { access_token: accessToken } = (await answer.json()) as { access_token: string };
    const called = await callTool(accessToken, 'list_notes');
    expect({ status: called.status, body: await called.json() }).toMatchObject({
      status: 200,
      body: { result: { content: [{ type: 'text', text: expect.any(String) }] } },
    });
  });

  it('the SDK client discovers Gatehouse, gets a token for the resource with tools:read, lists and calls a tool', async () => {
    const key = await t.createKey(member, 'agent-read');
    const { client, provider } = await connect(key, 'tools:read');
    const { tools } = await client.listTools();
    expect(tools.map((tool) => tool.name).sort()).toEqual(['add_note', 'list_notes']);
    expect(text(await client.callTool({ name: 'list_notes', arguments: {} }))).toBe('[]');

    const claims = decodeJwt(provider.tokens()!.access_token).payload;
    expect(claims).toMatchObject({ aud: audience, scope: 'tools:read', client_id: key.id, sub: member.userId });
  });

  it('a tool needing tools:write is 403 insufficient_scope with the scope to ask for; a token with it may call it', async () => {
    const readOnly = await t.createKey(member, 'agent-step-up');
    const { client, provider } = await connect(readOnly, 'tools:read');
    await expect(client.callTool({ name: 'add_note', arguments: { text: 'first' } })).rejects.toMatchObject({
      code: 403,
    });
    const refused = await callTool(provider.tokens()!.access_token, 'add_note', { text: 'first' });
    expect(refused.status).toBe(403);
    expect(refused.headers.get('www-authenticate')).toBe(
      `Bearer realm="gatehouse", error="insufficient_scope", scope="tools:read tools:write", ` +
        `resource_metadata="${metadataUrl()}"`,
    );
    expect(await refused.json()).toMatchObject({ code: 'insufficient_scope' });

    const writer = await connect(await t.createKey(member, 'agent-write'), 'tools:read tools:write');
    expect(text(await writer.client.callTool({ name: 'add_note', arguments: { text: 'first' } }))).toBe('added note 1');
    expect(text(await client.callTool({ name: 'list_notes', arguments: {} }))).toBe('["first"]');

    // Another organization's agent sees its own organization's notes only.
    const stranger = await t.user({ org: 'mcp-others', role: 'member' });
    const theirs = await connect(await t.createKey(stranger, 'stranger'), 'tools:read');
    expect(text(await theirs.client.callTool({ name: 'list_notes', arguments: {} }))).toBe('[]');
  });

  it("refuses a revoked key's token at the MCP server within 1 s (the verifier's feed)", async () => {
    const key = await t.createKey(member, 'agent-revoked');
    const { client, provider } = await connect(key, 'tools:read');
    await client.callTool({ name: 'list_notes', arguments: {} });
    const accessToken = provider.tokens()!.access_token;
    expect((await callTool(accessToken, 'list_notes')).status).toBe(200);
    await t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${member.token}`).expect(200);
    const revokedAt = performance.now();
    await waitFor('the revoked key refused', async () => (await callTool(accessToken, 'list_notes')).status === 401, {
      timeoutMs: 1000,
    });
    console.log(`mcp (${DATABASE_KIND}): revoked key refused ${(performance.now() - revokedAt).toFixed(0)} ms after`);
    await expect(client.callTool({ name: 'list_notes', arguments: {} })).rejects.toThrow();
  });

  describe('tokens for a resource server that declares scopes', () => {
    it('get every declared scope when none is asked for, and none of the key permissions', async () => {
      const key = await t.createKey(member, 'all-declared');
      const response = await token({ resource: audience }, key).expect(200);
      expect(response.body.scope).toBe('tools:read tools:write');
      expect(decodeJwt(response.body.access_token as string).payload).toMatchObject({
        aud: audience,
        scope: 'tools:read tools:write',
      });
      // POST /v1/token and the declared order, whatever the order asked.
      const v1 = await t
        .http()
        .post('/v1/token')
        .set('Authorization', `ApiKey ${key.value}`)
        .send({ resource: audience, scope: 'tools:write tools:read' })
        .expect(200);
      expect(v1.body.scope).toBe('tools:read tools:write');
    });

    it('refuse a scope the resource server does not declare, a Gatehouse permission included (invalid_scope)', async () => {
      const key = await t.createKey(member, 'undeclared');
      for (const scope of ['tools:admin', 'tools:read tools:admin', 'api_keys:read']) {
        const response = await token({ resource: audience, scope }, key).expect(400);
        expect(response.body).toEqual({
          error: 'invalid_scope',
          error_description: `the resource does not declare the scope ${scope.replace('tools:read ', '')}`,
          reason: 'scope_not_declared',
        });
      }
      const v1 = await t
        .http()
        .post('/v1/token')
        .set('Authorization', `ApiKey ${key.value}`)
        .send({ resource: audience, scope: 'tools:admin' })
        .expect(400);
      expect(v1.body).toMatchObject({ code: 'INVALID_ARGUMENT', message: 'invalid request parameters' });
      // Without the resource, the names are Gatehouse's permissions as before.
      await token({ scope: 'tools:read' }, key).expect(400, {
        error: 'invalid_scope',
        error_description: 'scope must be distinct permission names separated by spaces',
        reason: 'scope_not_a_permission',
      });
    });

    it('refuse an unknown resource (invalid_target)', async () => {
      const key = await t.createKey(member, 'unknown-resource');
      const response = await token({ resource: `${audience}/elsewhere`, scope: 'tools:read' }, key).expect(400);
      expect(response.body.error).toBe('invalid_target');
    });

    it("introspection answers the resource server the token's declared scopes", async () => {
      const key = await t.createKey(member, 'introspected');
      const issued = await token({ resource: audience, scope: 'tools:read' }, key).expect(200);
      const servers = t.get(ResourceServersService);
      const registered = await servers.register('Notes introspection', `${audience}-introspection`, SCOPES);
      const other = await token({ resource: `${audience}-introspection` }, key).expect(200);
      const { clientId, clientSecret } = registered;
      const introspect = (value: string) =>
        t
          .http()
          .post('/oauth/introspect')
          .type(FORM)
          .set('Authorization', basic(clientId, clientSecret))
          .send(new URLSearchParams({ token: value }).toString())
          .expect(200);
      expect((await introspect(other.body.access_token as string)).body).toMatchObject({
        active: true,
        scope: 'tools:read tools:write',
      });
      // Another resource server's token is not this one's.
      expect((await introspect(issued.body.access_token as string)).body).toEqual({ active: false });
    });
  });
});
