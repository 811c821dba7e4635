import { DataSource } from 'typeorm';
import { Metrics } from '../../src/metrics/metrics';
import { IdleClientSweep } from '../../src/oauth/clients/idle-client-sweep';
import { RegisteredClients } from '../../src/oauth/clients/registered-clients.service';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { freezeDate } from '../support/clock';
import { allowedCode, authorizeQuery, consentRequest, tokenRequest } from '../support/code-flow';
import { bearer, decodeJwt, UUID } from '../support/http-assertions';
import { rowCount } from '../support/row-counts';
import { createTestApp, DATABASE_KIND, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';

/**
 * Dynamic client registration (RFC 7591, docs/mcp.md#dynamic-client-registration): off unless the operator turns it
 * on; public clients only, their redirect URIs checked (https, or loopback http), the body and fields bounded, a few
 * registrations per address an hour, RFC 7591's errors; the registered client in the authorization code grant, and
 * refused, then removed with its grants, once idle.
 */
const AUDIENCE = 'https://dcr.example.com/mcp';
const REDIRECT = 'http://127.0.0.1:40111/callback';
const DAY_MS = 86_400_000;

function register(t: TestApp, body: unknown) {
  return t
    .http()
    .post('/oauth/register')
    .send(body as object);
}

describe(`dynamic client registration, off by default (${DATABASE_KIND})`, () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp();
  });

  afterAll(async () => {
    await t.close();
  });

  it('is not in the metadata, answers 404 and stores nothing', async () => {
    const { body } = await t.http().get('/.well-known/oauth-authorization-server').expect(200);
    expect(body).not.toHaveProperty('registration_endpoint');
    const response = await register(t, { redirect_uris: [REDIRECT] }).expect(404);
    expect(response.body).toEqual({
      error: 'invalid_request',
      error_description: 'dynamic client registration is off',
      reason: 'registration_disabled',
    });
    expect(await rowCount(t, 'oauth_clients')).toBe(0);
  });
});

describe(`dynamic client registration, on (${DATABASE_KIND})`, () => {
  let t: TestApp;
  let person: TestUser;

  beforeAll(async () => {
    t = await createTestApp({
      env: {
        OAUTH_DYNAMIC_REGISTRATION: 'on',
        OAUTH_DYNAMIC_CLIENT_IDLE_DAYS: '30',
        OAUTH_REGISTRATIONS_PER_HOUR: '100',
      },
    });
    person = await t.user({ org: 'dcr-people', role: 'member' });
    await t
      .get(ResourceServersService)
      .register('DCR MCP', AUDIENCE, [{ name: 'tools:read', description: 'Read-only tools' }]);
  });

  afterAll(async () => {
    jest.useRealTimers();
    await t.close();
  });

  afterEach(() => jest.useRealTimers());

  it('names the registration endpoint in the metadata', async () => {
    const { body } = await t.http().get('/.well-known/oauth-authorization-server').expect(200);
    expect(body.registration_endpoint).toBe(`${t.config.console.publicBaseUrl}/oauth/register`);
  });

  it('registers a public client: 201, its id and the metadata kept, audited, no secret', async () => {
    const response = await register(t, {
      client_name: 'Claude Code',
      redirect_uris: [REDIRECT, 'https://app.example.com/cb'],
      token_endpoint_auth_method: 'none',
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      scope: 'tools:read',
      logo_uri: 'https://app.example.com/logo.png',
    }).expect(201);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.body).toEqual({
      client_id: expect.stringMatching(UUID),
      client_id_issued_at: expect.any(Number),
      client_name: 'Claude Code',
      redirect_uris: [REDIRECT, 'https://app.example.com/cb'],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: 'none',
    });
    expect(Math.abs(response.body.client_id_issued_at * 1000 - Date.now())).toBeLessThan(60_000);
    const [row] = await t
      .get(DataSource)
      .query(
        `SELECT kind, organization_id, name, secret_hash FROM oauth_clients WHERE id = '${response.body.client_id}'`,
      );
    expect(row).toEqual({ kind: 'dynamic', organization_id: null, name: 'Claude Code', secret_hash: null });
    const audit = await t
      .get(DataSource)
      .query(`SELECT action, organization_id, reason FROM audit_events WHERE target_id = '${response.body.client_id}'`);
    expect(audit).toEqual([{ action: 'oauth_client.created', organization_id: null, reason: 'dynamic' }]);
  });

  it('names a client without client_name "Unnamed app"', async () => {
    const response = await register(t, { redirect_uris: [REDIRECT] }).expect(201);
    expect(response.body.client_name).toBe('Unnamed app');
  });

  describe('refuses, with RFC 7591 errors, and stores nothing', () => {
    const cases: Array<[string, unknown, 'invalid_redirect_uri' | 'invalid_client_metadata', RegExp]> = [
      ['no redirect_uris', { client_name: 'x' }, 'invalid_redirect_uri', /redirect_uris must be a list of 1 to 10/],
      ['an empty list', { redirect_uris: [] }, 'invalid_redirect_uri', /redirect_uris must be a list/],
      [
        'http on a public host',
        { redirect_uris: ['http://app.example.com/cb'] },
        'invalid_redirect_uri',
        /must be https, http on a loopback host/,
      ],
      [
        'a private-use scheme that is not a reverse domain name',
        { redirect_uris: ['myapp:/cb'] },
        'invalid_redirect_uri',
        /or a native app's private-use scheme: a reverse domain name/,
      ],
      ['javascript:', { redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri', /must be https/],
      ['data:', { redirect_uris: ['data:text/html,hi'] }, 'invalid_redirect_uri', /must be https/],
      ['file:', { redirect_uris: ['file:///tmp/cb'] }, 'invalid_redirect_uri', /must be https/],
      ['a fragment', { redirect_uris: ['https://app.example.com/cb#x'] }, 'invalid_redirect_uri', /has a fragment/],
      ['credentials', { redirect_uris: ['https://u:p@app.example.com/cb'] }, 'invalid_redirect_uri', /has credentials/],
      ['a relative URI', { redirect_uris: ['/cb'] }, 'invalid_redirect_uri', /is not an absolute URL/],
      ['a URI that is not a string', { redirect_uris: [42] }, 'invalid_redirect_uri', /must be a string/],
      [
        'eleven URIs',
        { redirect_uris: Array.from({ length: 11 }, (_, i) => `https://a.example/${i}`) },
        'invalid_redirect_uri',
        /more than 10/,
      ],
      [
        'a URI of 2,001 characters',
        { redirect_uris: [`https://a.example/${'x'.repeat(1983)}`] },
        'invalid_redirect_uri',
        /longer than 2000/,
      ],
      [
        'a confidential client',
        { redirect_uris: [REDIRECT], token_endpoint_auth_method: 'client_secret_basic' },
        'invalid_client_metadata',
        /only public clients/,
      ],
      [
        'another grant type',
        { redirect_uris: [REDIRECT], grant_types: ['client_credentials'] },
        'invalid_client_metadata',
        /grant_types may hold only/,
      ],
      [
        'no authorization_code',
        { redirect_uris: [REDIRECT], grant_types: ['refresh_token'] },
        'invalid_client_metadata',
        /must hold authorization_code/,
      ],
      [
        'another response type',
        { redirect_uris: [REDIRECT], response_types: ['token'] },
        'invalid_client_metadata',
        /response_types may hold only code/,
      ],
      [
        'a name of 256 characters',
        { redirect_uris: [REDIRECT], client_name: 'n'.repeat(256) },
        'invalid_client_metadata',
        /longer than 255/,
      ],
      [
        'a name with a control character',
        { redirect_uris: [REDIRECT], client_name: 'a\u0007b' },
        'invalid_client_metadata',
        /control character/,
      ],
      ['a list, not an object', [REDIRECT], 'invalid_client_metadata', /must be a JSON object/],
    ];
    it.each(cases)('%s', async (_case, body, error, description) => {
      const before = await rowCount(t, 'oauth_clients');
      const response = await register(t, body).expect(400);
      expect(response.body).toEqual({
        error,
        error_description: expect.stringMatching(description),
        reason: error === 'invalid_redirect_uri' ? 'client_redirect_uri_invalid' : 'client_metadata_invalid',
      });
      expect(await rowCount(t, 'oauth_clients')).toBe(before);
    });

    it('a body over 8 KB (413, unread) and one that is not JSON', async () => {
      const before = await rowCount(t, 'oauth_clients');
      const big = await register(t, { redirect_uris: [REDIRECT], client_uri: `https://a.example/${'x'.repeat(9000)}` });
      expect(big.status).toBe(413);
      expect(big.body.reason).toBe('body_too_large');
      const form = await t.http().post('/oauth/register').type('form').send('redirect_uris=x');
      expect(form.status).toBe(400);
      expect(await rowCount(t, 'oauth_clients')).toBe(before);
    });
  });

  it('a registered client goes through the authorization code grant; the consent page says it registered itself', async () => {
    const { client_id: clientId } = (await register(t, { client_name: 'Agent', redirect_uris: [REDIRECT] })).body;
    // RFC 8252: a loopback redirect URI's port may differ.
    const redirectUri = 'http://127.0.0.1:51999/callback';
    const request = { clientId, redirectUri, resource: AUDIENCE, scope: 'tools:read' };
    const signed = await consentRequest(t, request);
    const shown = await t
      .http()
      .get('/v1/oauth/consent')
      .query({ request: signed })
      .set(bearer(person.token))
      .expect(200);
    expect(shown.body.client).toEqual({
      client_id: clientId,
      client_name: 'Agent',
      host: null,
      logo_uri: null,
      registration: 'dynamic',
      redirect_host: '127.0.0.1:51999',
    });
    const { code, verifier } = await allowedCode(t, person, request);
    const issued = await tokenRequest(t, {
      grant_type: 'authorization_code',
      code,
      client_id: clientId,
      redirect_uri: redirectUri,
      code_verifier: verifier,
    }).expect(200);
    expect(decodeJwt(issued.body.access_token).payload).toMatchObject({
      iss: TEST_ISSUER,
      aud: AUDIENCE,
      client_id: clientId,
      sub: person.userId,
      scope: 'tools:read',
    });
    const refreshed = await tokenRequest(t, {
      grant_type: 'refresh_token',
      refresh_token: issued.body.refresh_token,
      client_id: clientId,
    }).expect(200);
    expect(refreshed.body.refresh_token).not.toBe(issued.body.refresh_token);
    // A public client: a secret is refused, by the form or HTTP Basic.
    const secret = await tokenRequest(t, {
      grant_type: 'refresh_token',
      refresh_token: refreshed.body.refresh_token,
      client_id: clientId,
      client_secret: 'x',
    }).expect(400);
    expect(secret.body.reason).toBe('client_secret_not_accepted');
    const [row] = await t.get(DataSource).query(`SELECT last_used_at FROM oauth_clients WHERE id = '${clientId}'`);
    expect(row.last_used_at).not.toBeNull();
  });

  it("a native app's private-use redirect URIs (RFC 8252 section 7.1): the code goes to the app's scheme", async () => {
    const cursor = 'cursor://anysphere.cursor-mcp/oauth/callback';
    const reverse = 'com.example.agent:/oauth2redirect';
    const response = await register(t, { client_name: 'Cursor', redirect_uris: [cursor, reverse] }).expect(201);
    expect(response.body.redirect_uris).toEqual([cursor, reverse]);
    const clientId = response.body.client_id as string;
    for (const [redirectUri, shown] of [
      [cursor, 'cursor://anysphere.cursor-mcp'],
      [reverse, 'com.example.agent:'],
    ]) {
      const request = { clientId, redirectUri, resource: AUDIENCE };
      // The consent page says where the browser returns: the app's scheme.
      const described = await t
        .http()
        .get('/v1/oauth/consent')
        .query({ request: await consentRequest(t, request) })
        .set(bearer(person.token))
        .expect(200);
      expect(described.body.client.redirect_host).toBe(shown);
      const { code, verifier } = await allowedCode(t, person, request);
      const issued = await tokenRequest(t, {
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: redirectUri,
        code_verifier: verifier,
      }).expect(200);
      expect(decodeJwt(issued.body.access_token).payload).toMatchObject({ client_id: clientId, aud: AUDIENCE });
    }
    const signed = await consentRequest(t, { clientId, redirectUri: cursor, resource: AUDIENCE });
    const decided = await t
      .http()
      .post('/v1/oauth/consent')
      .set(bearer(person.token))
      .send({ request: signed, decision: 'deny' })
      .expect(200);
    expect(decided.body.redirect_to).toBe(
      `${cursor}?error=access_denied&error_description=the+person+denied+the+request&state=st&iss=${encodeURIComponent(TEST_ISSUER)}`,
    );
    // Exactly as registered: no other path, and no port or host change as a loopback redirect may have.
    const page = await t
      .http()
      .get('/oauth/authorize')
      .query(authorizeQuery({ clientId, redirectUri: 'cursor://anysphere.cursor-mcp/other', resource: AUDIENCE }))
      .expect(400);
    expect(page.text).toMatch(/is not one of the client&#39;s redirect URIs/);
  });

  it('refuses a redirect URI the client did not register with a page, leaving no grant or code', async () => {
    const { client_id: clientId } = (await register(t, { redirect_uris: [REDIRECT, 'https://app.example.com/cb'] }))
      .body;
    const grants = await rowCount(t, 'oauth_grants');
    const codes = await rowCount(t, 'oauth_codes');
    for (const redirectUri of [
      'https://app.example.com/other',
      'https://app.example.com:8443/cb',
      'http://127.0.0.1:1/x',
    ]) {
      const page = await t
        .http()
        .get('/oauth/authorize')
        .query(authorizeQuery({ clientId, redirectUri, resource: AUDIENCE }))
        .expect(400);
      expect(page.headers.location).toBeUndefined();
      expect(page.text).toContain('is not one of the client&#39;s redirect URIs');
    }
    expect(await rowCount(t, 'oauth_grants')).toBe(grants);
    expect(await rowCount(t, 'oauth_codes')).toBe(codes);
  });

  it('refuses an unknown registered client_id: a page at the authorization endpoint, invalid_client at the token endpoint', async () => {
    const unknown = '00000000-0000-4000-8000-000000000001';
    const page = await t
      .http()
      .get('/oauth/authorize')
      .query(authorizeQuery({ clientId: unknown, redirectUri: REDIRECT, resource: AUDIENCE }))
      .expect(400);
    expect(page.headers['content-type']).toMatch(/^text\/html/);
    expect(page.text).toMatch(/neither an https URL of a client metadata document nor a registered client/);
    const token = await tokenRequest(t, { grant_type: 'refresh_token', refresh_token: 'x', client_id: unknown }).expect(
      401,
    );
    expect(token.body).toEqual({
      error: 'invalid_client',
      error_description: 'client_id is neither an https URL of a client metadata document nor a registered client',
      reason: 'client_unknown',
    });
  });

  it('keeps a client that is used; refuses one idle past OAUTH_DYNAMIC_CLIENT_IDLE_DAYS, then removes it and its grants', async () => {
    const now = Date.now();
    freezeDate(now);
    const used = (await register(t, { client_name: 'Used', redirect_uris: [REDIRECT] })).body.client_id as string;
    const idle = (await register(t, { client_name: 'Idle', redirect_uris: [REDIRECT] })).body.client_id as string;
    const request = { clientId: idle, redirectUri: REDIRECT, resource: AUDIENCE };
    const { code, verifier } = await allowedCode(t, person, request);
    const issued = await tokenRequest(t, {
      grant_type: 'authorization_code',
      code,
      client_id: idle,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    }).expect(200);
    const grantId = decodeJwt(issued.body.access_token).payload.grant_id as string;

    jest.setSystemTime(now + 20 * DAY_MS);
    await consentRequest(t, { clientId: used, redirectUri: REDIRECT, resource: AUDIENCE });
    jest.setSystemTime(now + 31 * DAY_MS);
    // Used 11 days ago: still good. Idle 31 days: refused at the authorization and the token endpoint.
    await consentRequest(t, { clientId: used, redirectUri: REDIRECT, resource: AUDIENCE });
    const page = await t.http().get('/oauth/authorize').query(authorizeQuery(request)).expect(400);
    expect(page.text).toMatch(/has not been used for too long: register again/);
    const refresh = await tokenRequest(t, {
      grant_type: 'refresh_token',
      refresh_token: issued.body.refresh_token,
      client_id: idle,
    }).expect(401);
    expect(refresh.body.reason).toBe('client_unknown');

    expect(await t.get(IdleClientSweep).sweep()).toBeGreaterThanOrEqual(1);
    const db = t.get(DataSource);
    expect(await db.query(`SELECT id FROM oauth_clients WHERE id = '${idle}'`)).toEqual([]);
    expect(await db.query(`SELECT id FROM oauth_clients WHERE id = '${used}'`)).toHaveLength(1);
    expect(await db.query(`SELECT status FROM oauth_grants WHERE id = '${grantId}'`)).toEqual([{ status: 'revoked' }]);
    expect(await db.query(`SELECT token_hash FROM oauth_refresh_chains WHERE grant_id = '${grantId}'`)).toEqual([]);
    const audit = await db.query(
      `SELECT action, reason FROM audit_events WHERE target_id IN ('${idle}', '${grantId}') ORDER BY occurred_at, action`,
    );
    expect(audit).toEqual(
      expect.arrayContaining([
        { action: 'grant.revoked', reason: 'client_removed' },
        { action: 'oauth_client.removed', reason: 'idle' },
      ]),
    );
  });
});

describe(`dynamic client registration's limit per address (${DATABASE_KIND})`, () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({ env: { OAUTH_DYNAMIC_REGISTRATION: 'on', OAUTH_REGISTRATIONS_PER_HOUR: '3' } });
  });

  afterAll(async () => {
    await t.close();
  });

  /** gatehouse_rate_limit_refusals_total{limiter="oauth_registrations"} (docs/operations.md#metrics). */
  async function refusalsCounted(): Promise<number> {
    const metric = await t.get(Metrics).registry.getSingleMetric('gatehouse_rate_limit_refusals_total')!.get();
    return metric.values.find((value) => value.labels.limiter === 'oauth_registrations')?.value ?? -1;
  }

  it('counts every request, refused ones too, and answers 429 past OAUTH_REGISTRATIONS_PER_HOUR', async () => {
    expect(await refusalsCounted()).toBe(0);
    await register(t, { redirect_uris: ['http://example.com/cb'] }).expect(400);
    await register(t, { redirect_uris: [REDIRECT] }).expect(201);
    await register(t, { redirect_uris: [REDIRECT] }).expect(201);
    const refused = await register(t, { redirect_uris: [REDIRECT] }).expect(429);
    expect(refused.body).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'too many requests',
      reason: 'too_many_registrations',
    });
    expect(Number(refused.headers['retry-after'])).toBeGreaterThan(3000);
    expect(await rowCount(t, 'oauth_clients')).toBe(2);
    expect(await refusalsCounted()).toBe(1);
  });
});

describe(`dynamic client registration's cap, OAUTH_DYNAMIC_CLIENTS_MAX (${DATABASE_KIND})`, () => {
  let t: TestApp;

  beforeAll(async () => {
    t = await createTestApp({
      env: { OAUTH_DYNAMIC_REGISTRATION: 'on', OAUTH_REGISTRATIONS_PER_HOUR: '100', OAUTH_DYNAMIC_CLIENTS_MAX: '2' },
    });
  });

  afterAll(async () => {
    await t.close();
  });

  it('answers 429 dynamic_clients_full past the cap, storing and auditing nothing; a removal makes room', async () => {
    const first = (await register(t, { redirect_uris: [REDIRECT] }).expect(201)).body.client_id as string;
    await register(t, { redirect_uris: [REDIRECT] }).expect(201);
    const full = await register(t, { client_name: 'Third', redirect_uris: [REDIRECT] }).expect(429);
    expect(full.body).toEqual({
      error: 'temporarily_unavailable',
      error_description: 'this server keeps no more dynamically registered clients for now: try again later',
      reason: 'dynamic_clients_full',
    });
    expect(await rowCount(t, 'oauth_clients')).toBe(2);
    const audited = await t
      .get(DataSource)
      .query(`SELECT COUNT(*) AS n FROM audit_events WHERE action = 'oauth_client.created'`);
    expect(Number(audited[0].n)).toBe(2);
    // An organization's own clients are not counted against it.
    const admin = await t.user({ org: 'cap-org', role: 'admin' });
    await t
      .http()
      .post('/v1/organization/oauth-clients')
      .set(bearer(admin.token))
      .send({ name: 'Internal', redirect_uris: [REDIRECT] })
      .expect(201);
    await register(t, { redirect_uris: [REDIRECT] }).expect(429);
    await t.get(RegisteredClients).remove(first);
    await register(t, { redirect_uris: [REDIRECT] }).expect(201);
  });
});

describe(`clients registered while dynamic registration was on, once it is off (${DATABASE_KIND})`, () => {
  it('are refused, and stay listed for the operator to remove', async () => {
    const on = await createTestApp({ env: { OAUTH_DYNAMIC_REGISTRATION: 'on' } });
    const off = await createTestApp({ database: on.database });
    try {
      await on.get(ResourceServersService).register('Off MCP', AUDIENCE, []);
      const { client_id: clientId } = (await register(on, { redirect_uris: [REDIRECT] }).expect(201)).body;
      await consentRequest(on, { clientId, redirectUri: REDIRECT, resource: AUDIENCE });
      const page = await off
        .http()
        .get('/oauth/authorize')
        .query(authorizeQuery({ clientId, redirectUri: REDIRECT, resource: AUDIENCE }))
        .expect(400);
      expect(page.text).toMatch(/dynamic registration is off/);
      expect(await rowCount(off, 'oauth_clients')).toBe(1);
    } finally {
      await off.close();
      await on.close();
    }
  });
});
