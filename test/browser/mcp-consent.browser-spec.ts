import { auth, OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import type {
  OAuthClientInformationMixed,
  OAuthClientMetadata,
  OAuthTokens,
} from '@modelcontextprotocol/sdk/shared/auth.js';
import type { Page } from 'playwright-core';
import { ClientDocumentServer, REDIRECT_URI } from '../support/client-documents';
import { McpServerProcess } from '../support/mcp-server-process';
import { freePort } from '../support/ports';
import { waitFor } from '../support/wait';
import { atBothWidths, ConsoleBrowser } from './console-browser';
import type { ConsoleServer } from './console-server';

/**
 * THE end-to-end test of docs/mcp.md: a real MCP client (the SDK's StreamableHTTPClientTransport with an
 * OAuthClientProvider) finds Gatehouse from examples/mcp-server's 401, names itself by a Client ID Metadata Document
 * (served over https with the run's local CA), and sends the person to Gatehouse; Chromium signs in with a one-time
 * link and clicks Allow on the consent page. The SDK does PKCE and the token request itself, lists and calls a tool,
 * refreshes, and is refused within 1 s once the grant is revoked on the console's Connected apps page. The same SDK
 * without a metadata document registers itself (RFC 7591, the server has it on), and with the client_id of an app the
 * organization's admin registered on the console's OAuth apps page, uses that.
 */
const EMAIL = 'person@example.com';
const ADMIN = 'admin@example.com';
const ORG = 'mcp-browser';

/** The SDK's provider, its "redirect the user agent" step done by Chromium: it yields the code the redirect carried. */
class BrowserProvider implements OAuthClientProvider {
  private saved: OAuthTokens | undefined;
  private info: OAuthClientInformationMixed | undefined;
  private verifier = '';
  /** The code of the last authorization, once Chromium reached the redirect URI. */
  code: Promise<string> | undefined;
  /** Set once the grant is revoked: the SDK asking the person again is a refusal to the test. */
  refuseAuthorization = false;

  /** `clientMetadataUrl` undefined: the SDK registers the client (RFC 7591) unless `info` names one already. */
  constructor(
    readonly clientMetadataUrl: string | undefined,
    private readonly consent: (url: URL) => Promise<string>,
    info?: OAuthClientInformationMixed,
  ) {
    this.info = info;
  }

  get redirectUrl(): string {
    return REDIRECT_URI;
  }

  get clientMetadata(): OAuthClientMetadata {
    return { client_name: 'Test MCP client', redirect_uris: [REDIRECT_URI], token_endpoint_auth_method: 'none' };
  }

  clientInformation() {
    return this.info;
  }

  saveClientInformation(info: OAuthClientInformationMixed) {
    this.info = info;
  }

  tokens() {
    return this.saved;
  }

  saveTokens(tokens: OAuthTokens) {
    this.saved = tokens;
  }

  redirectToAuthorization(url: URL) {
    if (this.refuseAuthorization) throw new Error('the person would be asked again: the grant is gone');
    this.code = this.consent(url);
  }

  saveCodeVerifier(verifier: string) {
    this.verifier = verifier;
  }

  codeVerifier() {
    return this.verifier;
  }
}

describe('an MCP client connected by a person in the browser (docs/mcp.md)', () => {
  let documents: ClientDocumentServer;
  let suite: ConsoleBrowser;
  let server: ConsoleServer;
  let mcp: McpServerProcess;
  let page: Page;
  let audience: string;
  let clientId: string;

  beforeAll(async () => {
    documents = await ClientDocumentServer.start();
    clientId = documents.client('/mcp-client.json', { client_name: 'Test MCP client' });
    suite = await ConsoleBrowser.start({ NODE_EXTRA_CA_CERTS: documents.caFile, OAUTH_DYNAMIC_REGISTRATION: 'on' });
    server = suite.server;
    await server.member(ORG, EMAIL, 'member');
    await server.member(ORG, ADMIN, 'admin');
    audience = `http://127.0.0.1:${await freePort()}/mcp`;
    const registered = await server.cli(
      'resource-server',
      'add',
      '--name',
      'Notes',
      '--audience',
      audience,
      '--scope',
      'tools:read=List and call read-only tools',
      '--scope',
      'tools:write=Call tools that change notes',
    );
    mcp = await McpServerProcess.start({
      issuer: server.baseUrl,
      audience,
      clientId: registered.client_id as string,
      clientSecret: registered.client_secret as string,
    });
    ({ page } = await suite.newPage());
    // The client's loopback redirect URI: Chromium's request is answered here, its code read.
    await page.route(`${REDIRECT_URI}**`, (route) => route.fulfill({ status: 200, body: 'You can close this tab.' }));
  }, 180_000);

  afterAll(async () => {
    await mcp?.stop();
    await suite?.stop();
    await documents?.close();
  });

  /** What the consent page must say of the client beside its name. */
  type Shown = { name: string; host?: string; registration: RegExp };

  /**
   * The person's part in `on` (a page of its own: a tab not signed in yet): sign in when asked, read the consent page,
   * Allow; the code the redirect carries.
   */
  async function consentIn(on: Page, url: URL, shown: Shown): Promise<string> {
    const redirected = on.waitForRequest((request) => request.url().startsWith(REDIRECT_URI), { timeout: 30_000 });
    await on.goto(url.href);
    await on.getByRole('heading', { name: 'Sign in to the Gatehouse console' }).waitFor();
    await on.goto(await server.signInLink(ORG, EMAIL));
    await on.getByRole('heading', { name: 'Allow access?' }).waitFor();
    const lead = (await on.locator('.lead').textContent()) ?? '';
    expect(lead).toContain(shown.name);
    if (shown.host === undefined) expect(await on.getByTestId('client-host').count()).toBe(0);
    else expect(await on.getByTestId('client-host').textContent()).toBe(shown.host);
    expect(await on.getByTestId('client-registration').textContent()).toMatch(shown.registration);
    expect(lead).toContain('Notes');
    expect(lead).toContain(ORG);
    expect(await on.getByRole('list', { name: 'Permissions asked' }).textContent()).toContain(
      'List and call read-only tools',
    );
    await atBothWidths(on, 'consent');
    await on.getByRole('button', { name: 'Allow' }).click();
    const answer = new URL((await redirected).url());
    expect(answer.searchParams.get('iss')).toBe(server.baseUrl);
    return answer.searchParams.get('code')!;
  }

  const consent = (url: URL) =>
    consentIn(page, url, {
      name: 'Test MCP client',
      host: new URL(clientId).host,
      registration: /chose its own name; the address it comes from is/,
    });

  /** A tab of its own, whose client's loopback redirect is answered here. */
  async function newPage(): Promise<Page> {
    const { page: fresh } = await suite.newPage();
    await fresh.route(`${REDIRECT_URI}**`, (route) => route.fulfill({ status: 200, body: 'You can close this tab.' }));
    return fresh;
  }

  /** The SDK's connection through `provider`: it stops at the consent, then finishes with the code; lists and calls. */
  async function connectAndCall(provider: BrowserProvider): Promise<Client> {
    const first = new StreamableHTTPClientTransport(new URL(audience), { authProvider: provider });
    await expect(new Client({ name: 'test', version: '1.0.0' }).connect(first)).rejects.toThrow(/Unauthorized/);
    await first.finishAuth(await provider.code!);
    expect(provider.tokens()!.refresh_token).toMatch(/^gh_rt_/);
    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(audience), { authProvider: provider }));
    expect((await client.listTools()).tools.map((tool) => tool.name)).toContain('list_notes');
    await client.callTool({ name: 'list_notes', arguments: {} });
    return client;
  }

  it('connects, lists and calls a tool, refreshes, and is refused within 1 s of the revocation', async () => {
    const provider = new BrowserProvider(clientId, consent);
    const first = new StreamableHTTPClientTransport(new URL(audience), { authProvider: provider });
    // The SDK's discovery, CIMD client_id and PKCE: it stops at the person's consent.
    await expect(new Client({ name: 'test', version: '1.0.0' }).connect(first)).rejects.toThrow(/Unauthorized/);
    await first.finishAuth(await provider.code!);
    const issued = provider.tokens()!;
    expect(issued.refresh_token).toMatch(/^gh_rt_/);

    const client = new Client({ name: 'test', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(audience), { authProvider: provider }));
    const tools = await client.listTools();
    expect(tools.tools.map((tool) => tool.name)).toContain('list_notes');
    await client.callTool({ name: 'list_notes', arguments: {} });

    // A refresh, as the SDK does it: a new access token and a new refresh token.
    expect(await auth(provider, { serverUrl: new URL(audience) })).toBe('AUTHORIZED');
    const refreshed = provider.tokens()!;
    expect(refreshed.refresh_token).not.toBe(issued.refresh_token);
    await client.callTool({ name: 'list_notes', arguments: {} });

    // Revoked on the console's Connected apps page.
    await page.goto('/console/apps');
    await page.getByTestId('grant').first().waitFor();
    await atBothWidths(page, 'connected-apps');
    await page.getByRole('button', { name: 'Revoke' }).click();
    await page.getByRole('dialog').getByRole('button', { name: 'Revoke' }).click();
    await page.getByText('Test MCP client can no longer act for you').waitFor();
    provider.refuseAuthorization = true;
    await waitFor(
      "the MCP server refusing the revoked grant's access token",
      async () => {
        const answer = await fetch(audience, {
          method: 'POST',
          headers: {
            'Content-Type': 'application/json',
            Accept: 'application/json, text/event-stream',
            Authorization: `Bearer ${refreshed.access_token}`,
          },
          body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
        });
        return answer.status === 401;
      },
      { timeoutMs: 1_000 },
    );
    // The SDK's next call: its refresh is refused, and it would have to ask the person again.
    await expect(client.callTool({ name: 'list_notes', arguments: {} })).rejects.toThrow();
    await client.close();
  });

  it('registers itself (RFC 7591) when it has no metadata document, and the person sees that on the consent page', async () => {
    const tab = await newPage();
    const provider = new BrowserProvider(undefined, (url) =>
      consentIn(tab, url, {
        name: 'Test MCP client',
        registration:
          /registered itself with Gatehouse and chose its own name: nobody vouches for it\. It returns to 127\.0\.0\.1:33418/,
      }),
    );
    const client = await connectAndCall(provider);
    const registered = provider.clientInformation()!;
    expect(registered.client_id).toMatch(/^[0-9a-f-]{36}$/);
    const listed = (await server.cli('oauth-client', 'list', '--kind', 'dynamic')) as {
      oauth_clients: Array<{ client_id: string; name: string }>;
    };
    expect(listed.oauth_clients).toContainEqual(
      expect.objectContaining({ client_id: registered.client_id, name: 'Test MCP client' }),
    );
    const before = provider.tokens()!.refresh_token;
    expect(await auth(provider, { serverUrl: new URL(audience) })).toBe('AUTHORIZED');
    expect(provider.tokens()!.refresh_token).not.toBe(before);
    await client.callTool({ name: 'list_notes', arguments: {} });
    await client.close();
    await tab.context().close();
  });

  it("uses an app the organization's admin registered on the OAuth apps page, shown as the organization's", async () => {
    const adminTab = await newPage();
    await adminTab.goto(await server.signInLink(ORG, ADMIN));
    await adminTab.getByRole('navigation', { name: 'Console' }).getByRole('link', { name: 'OAuth apps' }).click();
    await adminTab.getByRole('heading', { level: 1, name: 'OAuth apps' }).waitFor();
    await adminTab.getByRole('button', { name: 'Register app' }).click();
    await adminTab.getByLabel('Name').fill('Internal notes assistant');
    await adminTab.getByLabel('Redirect URIs').fill(REDIRECT_URI);
    await adminTab.getByRole('button', { name: 'Register app' }).click();
    const registered = adminTab.getByText(/Internal notes assistant registered: its client_id is /);
    await registered.waitFor();
    const clientIdOfApp = /client_id is ([0-9a-f-]{36})/.exec((await registered.textContent())!)![1];
    await adminTab.getByRole('row', { name: /Internal notes assistant/ }).waitFor();

    const tab = await newPage();
    const provider = new BrowserProvider(
      undefined,
      (url) =>
        consentIn(tab, url, {
          name: 'Internal notes assistant',
          registration: new RegExp(
            `Registered by the admins of ${ORG} for an internal app; it returns to 127\\.0\\.0\\.1:33418`,
          ),
        }),
      { client_id: clientIdOfApp },
    );
    const client = await connectAndCall(provider);
    expect(provider.clientInformation()!.client_id).toBe(clientIdOfApp);
    await client.close();

    // Removed on the same page: its grant ends, the SDK's refresh is refused.
    await adminTab.getByRole('button', { name: 'Remove Internal notes assistant' }).click();
    await adminTab.getByRole('dialog').getByRole('button', { name: 'Remove app' }).click();
    await adminTab.getByText('Internal notes assistant removed').waitFor();
    const refresh = await fetch(`${server.baseUrl}/oauth/token`, {
      method: 'POST',
      headers: { 'Content-Type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({
        grant_type: 'refresh_token',
        refresh_token: provider.tokens()!.refresh_token!,
        client_id: clientIdOfApp,
      }),
    });
    expect({ status: refresh.status, body: await refresh.json() }).toMatchObject({
      status: 401,
      body: { error: 'invalid_client', reason: 'client_unknown' },
    });
    provider.refuseAuthorization = true;
    await expect(auth(provider, { serverUrl: new URL(audience) })).rejects.toThrow();
    await adminTab.context().close();
    await tab.context().close();
  });
});
