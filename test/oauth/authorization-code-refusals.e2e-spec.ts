import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { DataSource } from 'typeorm';
import { refreshChainOf } from '../../src/grants/grant-secrets';
import { CLIENT_DOCUMENT_CA } from '../../src/oauth/clients/client-documents';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { freezeDate } from '../support/clock';
import { ClientDocumentServer, pkce, REDIRECT_URI } from '../support/client-documents';
import { tokenRequest } from '../support/code-flow';
import { bearer, decodeJwt } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';

/**
 * Every refusal of the authorization code grant (docs/mcp.md#authorization-code): each with a clear error, and nothing
 * left behind (no grant, no token that works).
 */
const FORM = 'application/x-www-form-urlencoded';
const AUDIENCE = 'https://refusals.example.com/mcp';

describe(`authorization code refusals (${DATABASE_KIND})`, () => {
  let t: TestApp;
  let documents: ClientDocumentServer;
  let person: TestUser;
  let clientId: string;
  let assets: string;

  beforeAll(async () => {
    documents = await ClientDocumentServer.start();
    assets = mkdtempSync(join(tmpdir(), 'gatehouse-console-'));
    mkdirSync(join(assets, 'assets'));
    writeFileSync(join(assets, 'index.html'), '<!doctype html><title>Gatehouse console</title>');
    t = await createTestApp({
      env: { CONSOLE_ASSETS_DIR: assets },
      override: (builder) => builder.overrideProvider(CLIENT_DOCUMENT_CA).useValue(documents.caPem),
    });
    person = await t.user({ org: 'mcp-refusals', role: 'member' });
    await t
      .get(ResourceServersService)
      .register('Refusals MCP', AUDIENCE, [{ name: 'tools:read', description: 'Read-only tools' }]);
    clientId = documents.client('/clients/refusals.json');
  });

  afterAll(async () => {
    jest.useRealTimers();
    await t.close();
    await documents.close();
    rmSync(assets, { recursive: true, force: true });
  });

  afterEach(() => jest.useRealTimers());

  function query(overrides: Record<string, string | undefined> = {}) {
    const all: Record<string, string | undefined> = {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      code_challenge: pkce().challenge,
      code_challenge_method: 'S256',
      state: 'xyz',
      resource: AUDIENCE,
      ...overrides,
    };
    return Object.fromEntries(Object.entries(all).filter((entry): entry is [string, string] => entry[1] !== undefined));
  }

  /** A refusal shown as a page: 400, HTML, never a redirect, framed by nobody. */
  async function expectPage(parameters: Record<string, string>, says: string | RegExp) {
    const response = await t.http().get('/oauth/authorize').query(parameters);
    expect(response.status).toBe(400);
    expect(response.headers.location).toBeUndefined();
    expect(response.headers['content-type']).toMatch(/^text\/html/);
    expect(response.headers['x-frame-options']).toBe('DENY');
    expect(response.text).toMatch(says);
  }

  /** A refusal sent back to the client: its redirect URI with error, state and iss. */
  async function expectRedirect(parameters: Record<string, string>, error: string, description: RegExp) {
    const response = await t.http().get('/oauth/authorize').query(parameters).expect(302);
    const url = new URL(response.headers.location);
    expect(`${url.origin}${url.pathname}`).toBe(REDIRECT_URI);
    expect(url.searchParams.get('error')).toBe(error);
    expect(url.searchParams.get('error_description')).toMatch(description);
    expect(url.searchParams.get('state')).toBe('xyz');
    expect(url.searchParams.get('iss')).toBe(TEST_ISSUER);
  }

  /** What a refusal must not leave behind: the person's grants, codes and refresh tokens. */
  async function leftBehind(): Promise<{ grants: number; codes: number; refreshTokens: number }> {
    const db = t.get(DataSource);
    const count = async (query: string) => Number((await db.query(query))[0].n);
    return {
      grants: await count(`SELECT COUNT(*) AS n FROM oauth_grants WHERE user_id = '${person.userId}'`),
      codes: await count(
        `SELECT COUNT(*) AS n FROM oauth_codes c JOIN oauth_grants g ON g.id = c.grant_id WHERE g.user_id = '${person.userId}'`,
      ),
      refreshTokens: await refreshTokenCount(),
    };
  }

  async function code(challenge: string): Promise<string> {
    const started = await t
      .http()
      .get('/oauth/authorize')
      .query(query({ code_challenge: challenge }))
      .expect(302);
    const request = new URL(started.headers.location).searchParams.get('request')!;
    const decided = await t
      .http()
      .post('/v1/oauth/consent')
      .set(bearer(person.token))
      .send({ request, decision: 'allow' })
      .expect(200);
    return new URL(decided.body.redirect_to).searchParams.get('code')!;
  }

  function refresh(refreshToken: string) {
    return tokenRequest(t, { grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });
  }

  function redeem(form: Record<string, string>) {
    const request = { grant_type: 'authorization_code', client_id: clientId, redirect_uri: REDIRECT_URI };
    return tokenRequest(t, { ...request, ...form });
  }

  function expectInvalidGrant(
    response: { status: number; body: Record<string, unknown> },
    description: string,
    reason: string,
  ) {
    expect({ status: response.status, body: response.body }).toEqual({
      status: 400,
      body: { error: 'invalid_grant', error_description: description, reason },
    });
  }

  async function refreshTokenCount(): Promise<number> {
    const rows = await t
      .get(DataSource)
      .query(
        `SELECT r.token_hash FROM oauth_refresh_chains r JOIN oauth_grants g ON g.id = r.grant_id WHERE g.user_id = '${person.userId}'`,
      );
    return rows.length;
  }

  describe('at the token endpoint', () => {
    it('refuses a wrong or missing PKCE verifier; the code is spent', async () => {
      const before = await refreshTokenCount();
      const { verifier, challenge } = pkce();
      const wrong = await code(challenge);
      expectInvalidGrant(
        await redeem({ code: wrong, code_verifier: pkce().verifier }),
        'code_verifier does not match the code_challenge',
        'pkce_mismatch',
      );
      const missing = await code(challenge);
      expectInvalidGrant(
        await redeem({ code: missing }),
        'code_verifier does not match the code_challenge',
        'pkce_mismatch',
      );
      // A plain verifier (the challenge itself) is no S256 verifier.
      const plain = await code(challenge);
      expectInvalidGrant(
        await redeem({ code: plain, code_verifier: challenge }),
        'code_verifier does not match the code_challenge',
        'pkce_mismatch',
      );
      expect(verifier).not.toBe(challenge);
      expect(await refreshTokenCount()).toBe(before);
      // Each refused code is spent: its right verifier now gets code_reused, and nothing is issued.
      expectInvalidGrant(
        await redeem({ code: wrong, code_verifier: verifier }),
        'the code was used already: its grant is revoked',
        'code_reused',
      );
      expect(await refreshTokenCount()).toBe(before);
    });

    it('refuses a code for another redirect URI or client', async () => {
      const { verifier, challenge } = pkce();
      expectInvalidGrant(
        await redeem({ code: await code(challenge), code_verifier: verifier, redirect_uri: 'http://127.0.0.1:1/x' }),
        'redirect_uri differs from the authorization request',
        'redirect_uri_mismatch',
      );
      expectInvalidGrant(
        await redeem({
          code: await code(challenge),
          code_verifier: verifier,
          client_id: `${documents.origin}/clients/someone-else.json`,
        }),
        'the code was issued to another client',
        'client_mismatch',
      );
    });

    it('refuses a reused code and ends what the first use gave', async () => {
      const { verifier, challenge } = pkce();
      const once = await code(challenge);
      const first = await redeem({ code: once, code_verifier: verifier }).expect(200);
      expectInvalidGrant(
        await redeem({ code: once, code_verifier: verifier }),
        'the code was used already: its grant is revoked',
        'code_reused',
      );
      const grantId = decodeJwt(first.body.access_token).payload.grant_id as string;
      const [grant] = await t.get(DataSource).query(`SELECT status FROM oauth_grants WHERE id = '${grantId}'`);
      expect(grant.status).toBe('revoked');
      const refreshed = await t
        .http()
        .post('/oauth/token')
        .type(FORM)
        .send(
          new URLSearchParams({
            grant_type: 'refresh_token',
            refresh_token: first.body.refresh_token,
            client_id: clientId,
          }).toString(),
        );
      expect(refreshed.status).toBe(400);
    });

    it('refuses a code after 60 seconds', async () => {
      const { verifier, challenge } = pkce();
      const now = Date.now();
      freezeDate(now);
      const late = await code(challenge);
      jest.setSystemTime(now + 60_000);
      const before = await refreshTokenCount();
      expectInvalidGrant(await redeem({ code: late, code_verifier: verifier }), 'the code has expired', 'code_expired');
      expect(await refreshTokenCount()).toBe(before);
      const inTime = await code(challenge);
      jest.setSystemTime(now + 60_000 + 59_000);
      await redeem({ code: inTime, code_verifier: verifier }).expect(200);
    });

    it('refuses an unknown code, a client secret and a missing client_id', async () => {
      expectInvalidGrant(
        await redeem({ code: 'gh_ac_' + 'A'.repeat(43), code_verifier: pkce().verifier }),
        'the code is not valid',
        'code_invalid',
      );
      const secret = await redeem({ code: 'x', client_secret: 's' });
      expect(secret.body).toEqual({
        error: 'invalid_request',
        error_description: 'a public client sends no client_secret',
        reason: 'client_secret_not_accepted',
      });
      const noClient = await t.http().post('/oauth/token').type(FORM).send('grant_type=authorization_code&code=x');
      expect(noClient.body).toEqual({
        error: 'invalid_request',
        error_description: 'client_id is required',
        reason: 'parameter_missing',
      });
    });

    it('keeps one row a chain however often it is refreshed; a token of it from any earlier step, or a forged one, ends the grant', async () => {
      const { verifier, challenge } = pkce();
      const chainOf = async (code: string) => {
        const issued = (await redeem({ code, code_verifier: verifier }).expect(200)).body;
        const tokens = [issued.refresh_token as string];
        for (let step = 0; step < 3; step += 1) {
          tokens.push((await refresh(tokens[tokens.length - 1]).expect(200)).body.refresh_token as string);
        }
        return { grantId: decodeJwt(issued.access_token).payload.grant_id as string, tokens };
      };
      const db = t.get(DataSource);
      const chainRows = (token: string) =>
        db.query(`SELECT grant_id, refreshed_at FROM oauth_refresh_chains WHERE id = '${refreshChainOf(token)!}'`);

      // Four tokens along the chain, one row: the current token's hash, replaced at each step.
      const old = await chainOf(await code(challenge));
      expect(new Set(old.tokens.map(refreshChainOf)).size).toBe(1);
      expect(await chainRows(old.tokens[0])).toEqual([{ grant_id: old.grantId, refreshed_at: expect.anything() }]);
      // The first token, three steps back: a reuse, as much as the one just before.
      expectInvalidGrant(
        await refresh(old.tokens[0]),
        'the refresh token was used already: its grant is revoked',
        'refresh_token_reused',
      );
      expect(await chainRows(old.tokens[0])).toEqual([]);
      expect((await refresh(old.tokens[3])).body.reason).toBe('refresh_token_invalid');

      // A token that names a live chain with a secret it never had is refused as a reuse too: only a holder of one of
      // the chain's tokens knows its name.
      const forged = await chainOf(await code(challenge));
      const current = forged.tokens[3];
      const other = `${current.slice(0, 28)}${current[28] === 'A' ? 'B' : 'A'}${current.slice(29)}`;
      expect((await refresh(other)).body.reason).toBe('refresh_token_reused');
      expect(await db.query(`SELECT status FROM oauth_grants WHERE id = '${forged.grantId}'`)).toEqual([
        { status: 'revoked' },
      ]);
    });

    it('refuses a reused refresh token and ends the whole grant: its newest refresh token too, none left stored', async () => {
      const { verifier, challenge } = pkce();
      const first = (await redeem({ code: await code(challenge), code_verifier: verifier }).expect(200)).body;
      const grantId = decodeJwt(first.access_token).payload.grant_id as string;
      const second = (await refresh(first.refresh_token).expect(200)).body;
      expectInvalidGrant(
        await refresh(first.refresh_token),
        'the refresh token was used already: its grant is revoked',
        'refresh_token_reused',
      );
      expectInvalidGrant(
        await refresh(second.refresh_token),
        'the refresh token is not valid',
        'refresh_token_invalid',
      );
      const db = t.get(DataSource);
      expect(await db.query(`SELECT status FROM oauth_grants WHERE id = '${grantId}'`)).toEqual([
        { status: 'revoked' },
      ]);
      expect(await db.query(`SELECT token_hash FROM oauth_refresh_chains WHERE grant_id = '${grantId}'`)).toEqual([]);
    });
  });

  describe('at the authorization endpoint', () => {
    it('shows a page, never a redirect, while the client or its redirect URI is not known', async () => {
      const before = await leftBehind();
      await expectPage(query({ client_id: undefined }), 'client_id is required');
      await expectPage(query({ redirect_uri: undefined }), 'redirect_uri is required');
      await expectPage(
        query({ redirect_uri: 'https://attacker.example/cb' }),
        'redirect_uri https://attacker.example/cb is not one of the client&#39;s redirect URIs',
      );
      await expectPage(query({ client_id: 'my-client' }), 'neither an https URL');
      await expectPage(query({ client_id: 'https://localhost/' }), 'a path');
      await expectPage(query({ client_id: '00000000-0000-4000-8000-000000000000' }), 'nor a registered client');
      expect(await leftBehind()).toEqual(before);
    });

    it('accepts a loopback redirect URI on another port (RFC 8252)', async () => {
      await t
        .http()
        .get('/oauth/authorize')
        .query(query({ redirect_uri: 'http://127.0.0.1:51234/callback' }))
        .expect(302)
        .expect('location', /\/console\/consent\?request=/);
      await expectPage(query({ redirect_uri: 'http://127.0.0.1:51234/other' }), 'is not one of');
    });

    it('sends the other refusals back to the client with iss', async () => {
      const before = await leftBehind();
      await expectRedirect(
        query({ response_type: 'token' }),
        'unsupported_response_type',
        /response_type must be code/,
      );
      await expectRedirect(
        query({ code_challenge_method: 'plain' }),
        'invalid_request',
        /S256 \(plain is not accepted\)/,
      );
      await expectRedirect(query({ code_challenge: undefined }), 'invalid_request', /code_challenge is required/);
      await expectRedirect(query({ resource: undefined }), 'invalid_target', /resource is required/);
      await expectRedirect(
        query({ resource: 'https://unknown.example.com' }),
        'invalid_target',
        /no registered resource server/,
      );
      await expectRedirect(
        query({ scope: 'tools:read tools:delete' }),
        'invalid_scope',
        /does not declare tools:delete/,
      );
      // Gatehouse's own permissions are no resource server's scopes.
      await expectRedirect(query({ scope: 'api_keys:read' }), 'invalid_scope', /does not declare api_keys:read/);
      expect(await leftBehind()).toEqual(before);
    });

    it('refuses a client metadata document that is too large, too slow, or names another client_id', async () => {
      const before = await leftBehind();
      const big = documents.client('/clients/big.json', { client_name: 'x'.repeat(6 * 1024) });
      await expectPage(query({ client_id: big }), /larger than 5120 bytes/);
      const slow = documents.client('/clients/slow.json', {}, { delayMs: 5_000 });
      await expectPage(query({ client_id: slow }), /no answer within 3 s/);
      documents.answers.set('/clients/liar.json', {
        body: JSON.stringify({ client_id: `${documents.origin}/clients/other.json`, redirect_uris: [REDIRECT_URI] }),
      });
      await expectPage(query({ client_id: `${documents.origin}/clients/liar.json` }), /names another client_id/);
      const confidential = documents.client('/clients/secret.json', {
        token_endpoint_auth_method: 'client_secret_basic',
      });
      await expectPage(query({ client_id: confidential }), /only public clients/);
      expect(await leftBehind()).toEqual(before);
    });

    it("accepts a document's private-use redirect URI (RFC 8252 section 7.1); refuses one with javascript: or plain http", async () => {
      const cursor = 'cursor://anysphere.cursor-mcp/oauth/callback';
      const native = documents.client('/clients/native.json', { redirect_uris: [cursor, REDIRECT_URI] });
      await t
        .http()
        .get('/oauth/authorize')
        .query(query({ client_id: native, redirect_uri: cursor }))
        .expect(302)
        .expect('location', /\/console\/consent\?request=/);
      const before = await leftBehind();
      for (const [path, uri] of [
        ['/clients/script.json', 'javascript:alert(document.domain)'],
        ['/clients/data.json', 'data:text/html,hi'],
        ['/clients/http.json', 'http://app.example.com/cb'],
        ['/clients/scheme.json', 'myapp:/cb'],
      ]) {
        const refused = documents.client(path, { redirect_uris: [REDIRECT_URI, uri] });
        await expectPage(query({ client_id: refused }), /redirect_uris: the redirect URI .* must be https/);
      }
      expect(await leftBehind()).toEqual(before);
    });

    it('keeps a document as long as its Cache-Control says', async () => {
      const cached = documents.client('/clients/cached.json', {}, { cacheControl: 'max-age=600' });
      const uncached = documents.client('/clients/uncached.json', {}, { cacheControl: 'no-store' });
      for (let i = 0; i < 2; i++) {
        await t
          .http()
          .get('/oauth/authorize')
          .query(query({ client_id: cached }))
          .expect(302);
        await t
          .http()
          .get('/oauth/authorize')
          .query(query({ client_id: uncached }))
          .expect(302);
      }
      expect(documents.hits.get('/clients/cached.json')).toBe(1);
      expect(documents.hits.get('/clients/uncached.json')).toBe(2);
    });
  });

  describe('the consent page', () => {
    it('is never shown inside a frame', async () => {
      const started = await t.http().get('/oauth/authorize').query(query()).expect(302);
      const page = await t
        .http()
        .get(new URL(started.headers.location).pathname + new URL(started.headers.location).search)
        .expect(200);
      expect(page.headers['content-security-policy']).toMatch(/(^|; )frame-ancestors 'none'(;|$)/);
      expect(page.headers['x-frame-options']).toBe('DENY');
    });

    it('takes decisions only with a session token, for a request of ours', async () => {
      const started = await t.http().get('/oauth/authorize').query(query()).expect(302);
      const request = new URL(started.headers.location).searchParams.get('request')!;
      await t.http().post('/v1/oauth/consent').send({ request, decision: 'allow' }).expect(401);
      const key = await t.createKey(person, 'not-for-consent');
      const accessToken = await t.exchange(key.value);
      await t
        .http()
        .post('/v1/oauth/consent')
        .set(bearer(accessToken))
        .send({ request, decision: 'allow' })
        .expect(403);
      const forged = await t
        .http()
        .post('/v1/oauth/consent')
        .set(bearer(person.token))
        .send({ request: `${request.split('.')[0]}.AAAA`, decision: 'allow' })
        .expect(400);
      expect(forged.body).toMatchObject({
        code: 'INVALID_ARGUMENT',
        message: 'the authorization request has expired or is not valid: start again',
      });
    });
  });
});

describe(`client metadata documents in production (${DATABASE_KIND})`, () => {
  let t: TestApp;
  let documents: ClientDocumentServer;

  beforeAll(async () => {
    documents = await ClientDocumentServer.start();
    t = await createTestApp({
      env: { NODE_ENV: 'production' },
      override: (builder) => builder.overrideProvider(CLIENT_DOCUMENT_CA).useValue(documents.caPem),
    });
  });

  afterAll(async () => {
    await t.close();
    await documents.close();
  });

  it('refuses a document on a loopback or private address, without a request to it and leaving nothing', async () => {
    const clientId = documents.client('/clients/local.json');
    for (const id of [clientId, 'https://10.1.2.3/clients/private.json', 'https://[fd00::1]/clients/private.json']) {
      const response = await t
        .http()
        .get('/oauth/authorize')
        .query({ client_id: id, redirect_uri: REDIRECT_URI, response_type: 'code' });
      expect(response.status).toBe(400);
      expect(response.headers.location).toBeUndefined();
      expect(response.text).toMatch(/private, loopback, link-local/);
    }
    expect(documents.hits.get('/clients/local.json')).toBeUndefined();
    expect(Number((await t.get(DataSource).query('SELECT COUNT(*) AS n FROM oauth_grants'))[0].n)).toBe(0);
  });
});
