import type { Pool } from 'pg';
import { DataSource } from 'typeorm';
import type { PostgresDriver } from 'typeorm/driver/postgres/PostgresDriver.js';
import { CredentialKinds } from '../../src/credentials/credential-kinds';
import { GrantsService } from '../../src/grants/grants.service';
import { MembersService } from '../../src/members/members.service';
import { CLIENT_DOCUMENT_CA } from '../../src/oauth/clients/client-documents';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { duringAuditFailure } from '../support/audit-failure';
import { ClientDocumentServer, pkce, REDIRECT_URI } from '../support/client-documents';
import { bearer, decodeJwt, UUID } from '../support/http-assertions';
import { explain } from '../support/query-plans';
import { statementsDuring } from '../support/statements';
import { createTestApp, DATABASE_KIND, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';

/**
 * The authorization code grant for MCP clients (docs/mcp.md): authorize, consent, code, token, refresh, revoke; the
 * client a Client ID Metadata Document served over https.
 */
const FORM = 'application/x-www-form-urlencoded';
const AUDIENCE = 'https://mcp.example.com/mcp';

describe('authorization code grant', () => {
  let t: TestApp;
  let documents: ClientDocumentServer;
  let person: TestUser;
  let server: { clientId: string; clientSecret: string };
  let clientId: string;

  beforeAll(async () => {
    documents = await ClientDocumentServer.start();
    t = await createTestApp({
      override: (builder) => builder.overrideProvider(CLIENT_DOCUMENT_CA).useValue(documents.caPem),
    });
    person = await t.user({ org: 'mcp-people', role: 'member' });
    const registered = await t.get(ResourceServersService).register('Docs MCP', AUDIENCE, [
      { name: 'tools:read', description: 'List and call read-only tools' },
      { name: 'tools:write', description: 'Call tools that change documents' },
    ]);
    server = { clientId: registered.clientId, clientSecret: registered.clientSecret };
    clientId = documents.client('/clients/main.json', { client_name: 'Main client' });
  });

  afterAll(async () => {
    await t.close();
    await documents.close();
  });

  function authorizeQuery(overrides: Record<string, string | undefined> = {}, challenge = pkce().challenge) {
    const query: Record<string, string | undefined> = {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      state: 'st-1',
      resource: AUDIENCE,
      scope: 'tools:read',
      ...overrides,
    };
    return Object.fromEntries(
      Object.entries(query).filter((entry): entry is [string, string] => entry[1] !== undefined),
    );
  }

  /** GET /oauth/authorize, then Allow as `who`: the redirect's parameters. */
  async function consent(who: TestUser, query: Record<string, string>, decision = 'allow') {
    const started = await t.http().get('/oauth/authorize').query(query).expect(302);
    const consentUrl = new URL(started.headers.location);
    expect(consentUrl.pathname).toBe('/console/consent');
    const request = consentUrl.searchParams.get('request')!;
    const decided = await t
      .http()
      .post('/v1/oauth/consent')
      .set(bearer(who.token))
      .send({ request, decision })
      .expect(200);
    return new URL(decided.body.redirect_to).searchParams;
  }

  function token(form: Record<string, string>) {
    return t.http().post('/oauth/token').type(FORM).send(new URLSearchParams(form).toString());
  }

  /** A refresh token's request by the main client. */
  function refresh(refreshToken: string) {
    return token({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId });
  }

  async function codeTokens(who = person) {
    const { verifier, challenge } = pkce();
    const answer = await consent(who, authorizeQuery({}, challenge));
    const response = await token({
      grant_type: 'authorization_code',
      code: answer.get('code')!,
      redirect_uri: REDIRECT_URI,
      client_id: clientId,
      code_verifier: verifier,
    }).expect(200);
    return response.body as { access_token: string; refresh_token: string; expires_in: number; scope: string };
  }

  function introspect(accessToken: string) {
    return t
      .http()
      .post('/oauth/introspect')
      .type(FORM)
      .send(
        new URLSearchParams({
          token: accessToken,
          client_id: server.clientId,
          client_secret: server.clientSecret,
        }).toString(),
      )
      .expect(200);
  }

  it('publishes the authorization endpoint in its metadata', async () => {
    const { body } = await t.http().get('/.well-known/oauth-authorization-server').expect(200);
    expect(body).toMatchObject({
      authorization_endpoint: expect.stringMatching(/\/oauth\/authorize$/),
      code_challenge_methods_supported: ['S256'],
      response_types_supported: ['code'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
    });
    expect(body.grant_types_supported).toEqual(expect.arrayContaining(['authorization_code', 'refresh_token']));
    expect(body).not.toHaveProperty('registration_endpoint');
  });

  it('shows the consent page what is asked: the client, its host, the resource, the organization', async () => {
    const started = await t.http().get('/oauth/authorize').query(authorizeQuery()).expect(302);
    const request = new URL(started.headers.location).searchParams.get('request')!;
    const { body } = await t.http().get('/v1/oauth/consent').query({ request }).set(bearer(person.token)).expect(200);
    expect(body).toEqual({
      client: {
        client_id: clientId,
        client_name: 'Main client',
        host: new URL(clientId).host,
        logo_uri: null,
        registration: 'document',
        redirect_host: new URL(REDIRECT_URI).host,
      },
      resource: { audience: AUDIENCE, name: 'Docs MCP' },
      scopes: [{ name: 'tools:read', description: 'List and call read-only tools' }],
      organization: { id: person.organizationId, name: 'mcp-people' },
      remembered: false,
    });
  });

  it('issues a code, then an RFC 9068 access token for the resource and a refresh token', async () => {
    const { verifier, challenge } = pkce();
    const answer = await consent(person, authorizeQuery({}, challenge));
    expect(answer.get('state')).toBe('st-1');
    expect(answer.get('iss')).toBe(TEST_ISSUER);
    const response = await token({
      grant_type: 'authorization_code',
      code: answer.get('code')!,
      redirect_uri: REDIRECT_URI,
      client_id: clientId,
      code_verifier: verifier,
    }).expect(200);
    expect(response.headers['cache-control']).toBe('no-store');
    expect(response.body).toEqual({
      access_token: expect.any(String),
      token_type: 'Bearer',
      expires_in: 1800,
      scope: 'tools:read',
      refresh_token: expect.stringMatching(/^gh_rt_[A-Za-z0-9_-]{65}$/),
    });
    const { header, payload } = decodeJwt(response.body.access_token);
    expect(header.typ).toBe('at+jwt');
    expect(payload).toMatchObject({
      iss: TEST_ISSUER,
      aud: AUDIENCE,
      sub: person.userId,
      org: person.organizationId,
      client_id: clientId,
      grant_id: expect.stringMatching(UUID),
      scope: 'tools:read',
      token_use: 'access',
    });
    const active = await introspect(response.body.access_token);
    expect(active.body).toMatchObject({
      active: true,
      client_id: clientId,
      sub: person.userId,
      aud: AUDIENCE,
      scope: 'tools:read',
    });
    // The token is for the resource server, never for Gatehouse's own API.
    await t.http().get('/v1/grants').set(bearer(response.body.access_token)).expect(401);
  });

  it('remembers a consent for the same client, resource and scopes', async () => {
    await codeTokens();
    const started = await t.http().get('/oauth/authorize').query(authorizeQuery()).expect(302);
    const request = new URL(started.headers.location).searchParams.get('request')!;
    const { body } = await t.http().get('/v1/oauth/consent').query({ request }).set(bearer(person.token)).expect(200);
    expect(body.remembered).toBe(true);
    // Asking for more is asked again; Allow widens the one grant.
    const wider = await t
      .http()
      .get('/oauth/authorize')
      .query(authorizeQuery({ scope: 'tools:read tools:write' }))
      .expect(302);
    const widerRequest = new URL(wider.headers.location).searchParams.get('request')!;
    const asked = await t.http().get('/v1/oauth/consent').query({ request: widerRequest }).set(bearer(person.token));
    expect(asked.body.remembered).toBe(false);
    // One grant per person, client and resource.
    const grants = (await t.http().get('/v1/grants').set(bearer(person.token)).expect(200)).body.grants;
    expect(grants.filter((g: { client_id: string }) => g.client_id === clientId)).toHaveLength(1);
  });

  it('rotates the refresh token; a reused one ends the grant and its tokens', async () => {
    const first = await codeTokens();
    const second = (await refresh(first.refresh_token).expect(200)).body;
    expect(second.refresh_token).not.toBe(first.refresh_token);
    expect(decodeJwt(second.access_token).payload).toMatchObject({ aud: AUDIENCE, client_id: clientId });
    // Another client cannot use it.
    const other = await token({
      grant_type: 'refresh_token',
      refresh_token: second.refresh_token,
      client_id: `${documents.origin}/clients/other.json`,
    }).expect(400);
    expect(other.body.error).toBe('invalid_grant');
    const reused = await refresh(first.refresh_token).expect(400);
    expect(reused.body).toEqual({
      error: 'invalid_grant',
      error_description: 'the refresh token was used already: its grant is revoked',
      reason: 'refresh_token_reused',
    });
    expect((await introspect(second.access_token)).body).toEqual({ active: false });
    const grantId = decodeJwt(second.access_token).payload.grant_id as string;
    const { body } = await t.http().get('/v1/grants').set(bearer(person.token)).expect(200);
    expect(body.grants.find((g: { id: string }) => g.id === grantId)).toMatchObject({ status: 'revoked' });
  });

  describe("one turn's redemptions, committed together", () => {
    /** A new person's code for the main client, as the token request presents it (PKCE verifier included). */
    async function presentedCode() {
      const who = await t.user({ org: 'mcp-people', role: 'member' });
      const { verifier, challenge } = pkce();
      const code = (await consent(who, authorizeQuery({}, challenge))).get('code')!;
      return { code, clientId, redirectUri: REDIRECT_URI, codeVerifier: verifier, resource: undefined };
    }

    function outcomes(settled: Array<PromiseSettledResult<{ refreshToken: string }>>) {
      return settled.map((one) => (one.status === 'fulfilled' ? 'issued' : (one.reason as { reason: string }).reason));
    }

    it('a code presented twice in one turn is redeemed once: the other finds it used, which ends the grant', async () => {
      const presented = await presentedCode();
      const grants = t.get(GrantsService);
      let settled: Array<PromiseSettledResult<{ refreshToken: string }>> = [];
      const statements = await statementsDuring(t.get(DataSource), async () => {
        settled = await Promise.allSettled([grants.redeem(presented), grants.redeem(presented)]);
      });
      expect([...outcomes(settled)].sort()).toEqual(['code_reused', 'issued']);
      if (DATABASE_KIND === 'postgres') {
        // One statement for the turn's codes, committed alone: the code's row is updated once, for one of the two.
        expect(statements[0]).toMatch(/^WITH v AS \(SELECT .* changed AS \(UPDATE oauth_codes o SET used_at/);
        expect(statements[1]).not.toMatch(/UPDATE oauth_codes/);
      } else {
        // One transaction: the first marks it used and stores its refresh token, the second finds it used.
        expect(outcomes(settled)).toEqual(['issued', 'code_reused']);
        expect(statements.slice(0, 5)).toEqual([
          'BEGIN TRANSACTION',
          expect.stringMatching(/^UPDATE oauth_codes SET used_at/),
          expect.stringMatching(/^INSERT INTO oauth_refresh_chains /),
          expect.stringMatching(/^UPDATE oauth_codes SET used_at/),
          'COMMIT',
        ]);
      }
      const winner = settled.find((one) => one.status === 'fulfilled') as PromiseFulfilledResult<{
        refreshToken: string;
      }>;
      expect((await refresh(winner.value.refreshToken).expect(400)).body.reason).toBe('refresh_token_invalid');
    });

    it('a refresh token presented twice in one turn is redeemed once: the other ends the grant', async () => {
      const redeemed = await t.get(GrantsService).redeem(await presentedCode());
      const grants = t.get(GrantsService);
      const settled = await Promise.allSettled([
        grants.refresh(redeemed.refreshToken, clientId),
        grants.refresh(redeemed.refreshToken, clientId),
      ]);
      // SQLite: in turn, in one transaction; PostgreSQL: at once, the UPDATE's row lock lets one replace it.
      expect([...outcomes(settled)].sort()).toEqual(['issued', 'refresh_token_reused']);
      const winner = settled.find((one) => one.status === 'fulfilled') as PromiseFulfilledResult<{
        refreshToken: string;
      }>;
      expect((await refresh(winner.value.refreshToken).expect(400)).body.reason).toBe('refresh_token_invalid');
    });

    it('a refused redemption fails no other of its turn, and its code stays used', async () => {
      const good = await presentedCode();
      const wrong = await presentedCode();
      const grants = t.get(GrantsService);
      const settled = await Promise.allSettled([
        grants.redeem(Object.assign({}, wrong, { codeVerifier: pkce().verifier })),
        grants.redeem(good),
        grants.redeem(Object.assign({}, good, { code: `gh_ac_${'A'.repeat(43)}` })),
      ]);
      expect(outcomes(settled)).toEqual(['pkce_mismatch', 'issued', 'code_invalid']);
      await expect(grants.redeem(wrong)).rejects.toMatchObject({ reason: 'code_reused' });
      const issued = settled[1] as PromiseFulfilledResult<{ refreshToken: string }>;
      expect((await refresh(issued.value.refreshToken).expect(200)).body.refresh_token).toEqual(expect.any(String));
    });
  });

  it('revoking a grant refuses its access tokens at once, kills its refresh tokens and emits a credential-change', async () => {
    const issued = await codeTokens();
    const grantId = decodeJwt(issued.access_token).payload.grant_id as string;
    const { body } = await t.http().get('/v1/grants').set(bearer(person.token)).expect(200);
    expect(body.grants.find((g: { id: string }) => g.id === grantId)).toEqual({
      id: grantId,
      client_id: clientId,
      client_name: 'Main client',
      resource: AUDIENCE,
      scopes: ['tools:read'],
      status: 'active',
      user_id: person.userId,
      created_at: expect.any(String),
      last_used_at: expect.any(String),
    });
    await t.http().delete(`/v1/grants/${grantId}`).set(bearer(person.token)).expect(200);
    expect((await introspect(issued.access_token)).body).toEqual({ active: false });
    // Its refresh tokens are deleted: unknown now, not merely refused for a revoked grant.
    const refused = await refresh(issued.refresh_token).expect(400);
    expect(refused.body).toMatchObject({ error: 'invalid_grant', reason: 'refresh_token_invalid' });
    const events = await t
      .get(DataSource)
      .query(`SELECT event_type, subject, payload FROM ssf_events WHERE subject LIKE '%${grantId}%'`);
    expect(events).toHaveLength(1);
    expect(JSON.parse(events[0].subject)).toEqual({ format: 'opaque', id: grantId });
    expect(JSON.parse(events[0].payload)).toMatchObject({ credential_type: 'grant', change_type: 'revoke' });
    const audit = await t
      .get(DataSource)
      .query(`SELECT action, reason FROM audit_events WHERE target_id = '${grantId}' ORDER BY occurred_at, id`);
    expect(audit.map((row: { action: string }) => row.action)).toEqual(['grant.granted', 'grant.revoked']);
  });

  it('refuses a grant token at forward auth once revoked', async () => {
    const issued = await codeTokens();
    const grantId = decodeJwt(issued.access_token).payload.grant_id as string;
    const check = () => t.http().get('/v1/forward-auth').query({ audience: AUDIENCE }).set(bearer(issued.access_token));
    const allowed = await check().expect(200);
    expect(allowed.headers['x-gatehouse-grant-id']).toBe(grantId);
    await t.http().delete(`/v1/grants/${grantId}`).set(bearer(person.token)).expect(200);
    await check().expect(401);
  });

  it("keeps each person's grants: another member and another organization get 404, an admin sees and revokes", async () => {
    const issued = await codeTokens();
    const grantId = decodeJwt(issued.access_token).payload.grant_id as string;
    const colleague = await t.user({ org: 'mcp-people', role: 'member' });
    const stranger = await t.user({ org: 'mcp-others', role: 'admin' });
    await t.http().delete(`/v1/grants/${grantId}`).set(bearer(colleague.token)).expect(404);
    await t.http().delete(`/v1/grants/${grantId}`).set(bearer(stranger.token)).expect(404);
    await t.http().delete(`/v1/organization/grants/${grantId}`).set(bearer(stranger.token)).expect(404);
    await t.http().get('/v1/organization/grants').set(bearer(colleague.token)).expect(403);
    expect((await t.http().get('/v1/grants').set(bearer(colleague.token)).expect(200)).body.grants).toEqual([]);
    expect((await t.http().get('/v1/organization/grants').set(bearer(stranger.token)).expect(200)).body.grants).toEqual(
      [],
    );
    expect((await introspect(issued.access_token)).body.active).toBe(true);
    const admin = await t.user({ org: 'mcp-people', role: 'admin' });
    const listed = (await t.http().get('/v1/organization/grants').set(bearer(admin.token)).expect(200)).body.grants;
    expect(listed.map((g: { id: string }) => g.id)).toContain(grantId);
    await t.http().delete(`/v1/organization/grants/${grantId}`).set(bearer(admin.token)).expect(200);
    expect((await introspect(issued.access_token)).body).toEqual({ active: false });
  });

  it('removing a member revokes their grants in the removal, with a credential-change; their refresh tokens die', async () => {
    const leaving = await t.user({ org: 'mcp-people', role: 'member' });
    const issued = await codeTokens(leaving);
    const grantId = decodeJwt(issued.access_token).payload.grant_id as string;
    const dataSource = t.get(DataSource);
    // The removal fails whole when the grant's revocation cannot be audited: the grant stays, its tokens work.
    await expect(
      duringAuditFailure(dataSource, 'grant.revoked', () =>
        t.get(MembersService).remove(leaving.organizationId, leaving.userId),
      ),
    ).rejects.toThrow();
    expect((await introspect(issued.access_token)).body.active).toBe(true);

    expect(await t.get(MembersService).remove(leaving.organizationId, leaving.userId)).toMatchObject({
      removed: true,
      revokedKeys: 0,
    });
    expect((await introspect(issued.access_token)).body).toEqual({ active: false });
    const refreshed = await refresh(issued.refresh_token).expect(400);
    expect(refreshed.body).toMatchObject({ error: 'invalid_grant', reason: 'refresh_token_invalid' });
    const rows = await dataSource.query(`SELECT status FROM oauth_grants WHERE id = '${grantId}'`);
    expect(rows).toEqual([{ status: 'revoked' }]);
    const audit = await dataSource.query(
      `SELECT action, reason, actor_user_id FROM audit_events WHERE target_id = '${grantId}' ORDER BY occurred_at, id`,
    );
    expect(audit.slice(1)).toEqual([{ action: 'grant.revoked', reason: 'member_removed', actor_user_id: null }]);
    const events = await dataSource.query(`SELECT payload FROM ssf_events WHERE subject LIKE '%${grantId}%'`);
    expect(events.map((event: { payload: string }) => JSON.parse(event.payload))).toEqual([
      expect.objectContaining({ credential_type: 'grant', change_type: 'revoke' }),
    ]);
  });

  it('a consent the person gives after their removal stores no grant (401 member_removed)', async () => {
    const leaving = await t.user({ org: 'mcp-people', role: 'member' });
    const consent = {
      clientId,
      clientName: 'Main client',
      redirectUri: REDIRECT_URI,
      codeChallenge: pkce().challenge,
      resource: AUDIENCE,
      scopes: ['tools:read'],
    };
    await t.get(MembersService).remove(leaving.organizationId, leaving.userId);
    await expect(t.get(GrantsService).allow(leaving, consent)).rejects.toMatchObject({ reason: 'member_removed' });
    const rows = await t.get(DataSource).query(`SELECT id FROM oauth_grants WHERE user_id = '${leaving.userId}'`);
    expect(rows).toEqual([]);
  });

  it("reads a grant's liveness by primary key, a turn's reads in one query, through the credential core", async () => {
    const issued = await codeTokens();
    const grantId = decodeJwt(issued.access_token).payload.grant_id as string;
    const dataSource = t.get(DataSource);
    const store = t.get(CredentialKinds).of('grant')!;
    const query =
      DATABASE_KIND === 'sqlite'
        ? jest.spyOn(dataSource, 'query')
        : jest.spyOn((dataSource.driver as PostgresDriver).master as Pool, 'query');
    const found = await Promise.all([store.read(grantId), store.read('00000000-0000-4000-8000-000000000000')]);
    const calls = query.mock.calls as unknown as Array<[string, unknown[]]>;
    query.mockRestore();
    expect(calls).toHaveLength(1);
    expect(found).toEqual([
      expect.objectContaining({ userId: person.userId, status: 'ACTIVE', scopes: 0, expiresAtMs: null }),
      undefined,
    ]);
    const plan = await explain(dataSource, calls[0][0], calls[0][1], ['seqscan', 'bitmapscan']);
    expect(plan).not.toMatch(/SCAN (g|oauth_grants)\b|Seq Scan/);
    expect(plan).toMatch(DATABASE_KIND === 'sqlite' ? /SEARCH g USING INDEX/ : /Index (Only )?Scan/);
  });

  it('Deny sends access_denied to the client and grants nothing', async () => {
    const other = await t.user({ org: 'mcp-people', role: 'member' });
    const answer = await consent(other, authorizeQuery(), 'deny');
    expect(Object.fromEntries(answer)).toEqual({
      error: 'access_denied',
      error_description: 'the person denied the request',
      state: 'st-1',
      iss: TEST_ISSUER,
    });
    expect((await t.http().get('/v1/grants').set(bearer(other.token)).expect(200)).body.grants).toEqual([]);
  });
});
