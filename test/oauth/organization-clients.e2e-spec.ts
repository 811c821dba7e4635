import { DataSource } from 'typeorm';
import { MembersService } from '../../src/members/members.service';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { allowedCode, basic, consentRequest, FORM, tokenRequest } from '../support/code-flow';
import { bearer, decodeJwt, expectError, UUID } from '../support/http-assertions';
import { rowCount } from '../support/row-counts';
import { statementsDuring } from '../support/statements';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

/**
 * The OAuth clients an organization's admins register for internal apps (docs/mcp.md#clients): public or confidential
 * (a secret shown once, kept as an HMAC), usable in the authorization code grant by the organization's members only;
 * another organization's admin can neither see, use nor remove them, and a member cannot create them.
 */
const AUDIENCE = 'https://internal.example.com/mcp';
const REDIRECT = 'https://assistant.example.com/oauth/callback';
const ROUTE = '/v1/organization/oauth-clients';

describe(`an organization's own OAuth clients (${DATABASE_KIND})`, () => {
  let t: TestApp;
  let admin: TestUser;
  let member: TestUser;
  let otherAdmin: TestUser;
  let otherMember: TestUser;
  let server: { clientId: string; clientSecret: string };

  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.user({ org: 'internal', role: 'admin' });
    member = await t.user({ org: 'internal', role: 'member' });
    otherAdmin = await t.user({ org: 'elsewhere', role: 'admin' });
    otherMember = await t.user({ org: 'elsewhere', role: 'member' });
    const registered = await t
      .get(ResourceServersService)
      .register('Internal MCP', AUDIENCE, [{ name: 'tools:read', description: 'Read-only tools' }]);
    server = { clientId: registered.clientId, clientSecret: registered.clientSecret };
  });

  afterAll(async () => {
    await t.close();
  });

  function create(who: TestUser, body: Record<string, unknown>) {
    return t.http().post(ROUTE).set(bearer(who.token)).send(body);
  }

  function introspect(accessToken: string) {
    return t
      .http()
      .post('/oauth/introspect')
      .type(FORM)
      .set('Authorization', basic(server.clientId, server.clientSecret))
      .send(new URLSearchParams({ token: accessToken }).toString())
      .expect(200);
  }

  it('an admin registers a public client and a confidential one, whose secret is shown once and kept as a hash', async () => {
    const publicClient = await create(admin, { name: 'Desk assistant', redirect_uris: [REDIRECT] }).expect(201);
    expect(publicClient.body).toEqual({
      oauth_client: {
        client_id: expect.stringMatching(UUID),
        registration: 'organization',
        name: 'Desk assistant',
        redirect_uris: [REDIRECT],
        confidential: false,
        created_by: admin.userId,
        created_at: expect.any(String),
        last_used_at: null,
      },
      client_secret: null,
    });
    const confidential = await create(admin, {
      name: 'Reporting job',
      redirect_uris: [REDIRECT],
      confidential: true,
    }).expect(201);
    const secret = confidential.body.client_secret as string;
    expect(secret).toMatch(/^gh_cs_[A-Za-z0-9_-]{43}$/);
    const id = confidential.body.oauth_client.client_id as string;
    const [row] = await t
      .get(DataSource)
      .query(`SELECT secret_hash, organization_id FROM oauth_clients WHERE id = '${id}'`);
    expect(row.organization_id).toBe(admin.organizationId);
    expect(row.secret_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(JSON.stringify(await t.get(DataSource).query(`SELECT * FROM oauth_clients`))).not.toContain(secret);
    const listed = await t.http().get(ROUTE).set(bearer(admin.token)).expect(200);
    expect(listed.body.oauth_clients.map((c: { client_id: string }) => c.client_id)).toEqual([
      id,
      publicClient.body.oauth_client.client_id,
    ]);
    expect(JSON.stringify(listed.body)).not.toContain(secret);
    const audit = await t
      .get(DataSource)
      .query(`SELECT action, actor_user_id, reason FROM audit_events WHERE target_id = '${id}'`);
    expect(audit).toEqual([{ action: 'oauth_client.created', actor_user_id: admin.userId, reason: 'organization' }]);
  });

  it('refuses bad redirect URIs and names, saying what is wrong, and stores nothing', async () => {
    const before = await rowCount(t, 'oauth_clients');
    expectError(
      await create(admin, { name: 'x', redirect_uris: ['http://assistant.example.com/cb'], confidential: true }),
      400,
      'INVALID_ARGUMENT',
      'the redirect URI "http://assistant.example.com/cb" must be https, or http on a loopback host (127.0.0.1, [::1] or localhost)',
      'client_redirect_uri_invalid',
    );
    // A private-use scheme is a native (public) app's: a confidential web app gets none.
    expectError(
      await create(admin, { name: 'x', redirect_uris: ['com.example.desk:/cb'], confidential: true }),
      400,
      'INVALID_ARGUMENT',
      'the redirect URI "com.example.desk:/cb" must be https, or http on a loopback host (127.0.0.1, [::1] or localhost)',
      'client_redirect_uri_invalid',
    );
    expect(
      (await create(admin, { name: 'x', redirect_uris: ['javascript:alert(1)'] }).expect(400)).body.message,
    ).toMatch(/must be https, http on a loopback host .*, or a native app's private-use scheme/);
    expectError(
      await create(admin, { name: 'x\u0000y', redirect_uris: [REDIRECT] }),
      400,
      'INVALID_ARGUMENT',
      'name has a control character',
      'client_metadata_invalid',
    );
    expect((await create(admin, { name: 'x', redirect_uris: REDIRECT })).status).toBe(400);
    expect(await rowCount(t, 'oauth_clients')).toBe(before);
  });

  it('a member cannot list, create or remove them (403), and creates nothing', async () => {
    const before = await rowCount(t, 'oauth_clients');
    const mine = (await create(admin, { name: 'Kept', redirect_uris: [REDIRECT] }).expect(201)).body.oauth_client;
    expectError(
      await create(member, { name: 'Mine', redirect_uris: [REDIRECT] }),
      403,
      'PERMISSION_DENIED',
      'insufficient permissions',
      'insufficient_permissions',
    );
    await t.http().get(ROUTE).set(bearer(member.token)).expect(403);
    await t.http().delete(`${ROUTE}/${mine.client_id}`).set(bearer(member.token)).expect(403);
    expect(await rowCount(t, 'oauth_clients')).toBe(before + 1);
  });

  it("another organization's admin cannot see, use or remove them", async () => {
    const created = (await create(admin, { name: 'Ours only', redirect_uris: [REDIRECT] }).expect(201)).body;
    const clientId = created.oauth_client.client_id as string;
    const theirs = await t.http().get(ROUTE).set(bearer(otherAdmin.token)).expect(200);
    expect(theirs.body.oauth_clients.map((c: { client_id: string }) => c.client_id)).not.toContain(clientId);
    expectError(
      await t.http().delete(`${ROUTE}/${clientId}`).set(bearer(otherAdmin.token)),
      404,
      'NOT_FOUND',
      'oauth client not found',
      'oauth_client_not_found',
    );
    // Used by another organization's people: the consent page refuses it, no grant and no code is stored.
    const grants = await rowCount(t, 'oauth_grants');
    const codes = await rowCount(t, 'oauth_codes');
    const signed = await consentRequest(t, { clientId, redirectUri: REDIRECT, resource: AUDIENCE });
    for (const stranger of [otherAdmin, otherMember]) {
      const shown = await t.http().get('/v1/oauth/consent').query({ request: signed }).set(bearer(stranger.token));
      expectError(
        shown,
        400,
        'FAILED_PRECONDITION',
        'the client was refused: another organization registered it, for its own members only',
        'client_refused',
      );
      const decided = await t
        .http()
        .post('/v1/oauth/consent')
        .set(bearer(stranger.token))
        .send({ request: signed, decision: 'allow' });
      expect({ status: decided.status, reason: decided.body.reason }).toEqual({
        status: 400,
        reason: 'client_refused',
      });
    }
    expect(await rowCount(t, 'oauth_grants')).toBe(grants);
    expect(await rowCount(t, 'oauth_codes')).toBe(codes);
    // Still there for its own organization.
    await t.http().delete(`${ROUTE}/${clientId}`).set(bearer(admin.token)).expect(200);
  });

  it("a member uses a public one: the consent page names it as the organization's, then code and refresh", async () => {
    const clientId = (await create(admin, { name: 'Desk', redirect_uris: [REDIRECT] }).expect(201)).body.oauth_client
      .client_id as string;
    const request = { clientId, redirectUri: REDIRECT, resource: AUDIENCE, scope: 'tools:read' };
    const signed = await consentRequest(t, request);
    const shown = await t
      .http()
      .get('/v1/oauth/consent')
      .query({ request: signed })
      .set(bearer(member.token))
      .expect(200);
    expect(shown.body).toMatchObject({
      client: {
        client_id: clientId,
        client_name: 'Desk',
        host: null,
        registration: 'organization',
        redirect_host: 'assistant.example.com',
      },
      organization: { id: member.organizationId, name: 'internal' },
    });
    const { code, verifier } = await allowedCode(t, member, request);
    const issued = await tokenRequest(t, {
      grant_type: 'authorization_code',
      code,
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    }).expect(200);
    expect(decodeJwt(issued.body.access_token).payload).toMatchObject({ client_id: clientId, sub: member.userId });
    await tokenRequest(t, {
      grant_type: 'refresh_token',
      refresh_token: issued.body.refresh_token,
      client_id: clientId,
    }).expect(200);
    // A public client sends no secret.
    const withBasic = await tokenRequest(
      t,
      { grant_type: 'refresh_token', refresh_token: issued.body.refresh_token },
      basic(clientId, 'anything'),
    );
    expect({ status: withBasic.status, reason: withBasic.body.reason }).toEqual({
      status: 400,
      reason: 'client_authentication_not_accepted',
    });
  });

  it("a public one's code and refresh requests each send one statement (PostgreSQL), or one transaction (SQLite)", async () => {
    // The cost of a code or refresh request (docs/adr/0061-code-and-refresh-cost.md): the redemption with the client's
    // and the grant's checks in one statement, which on PostgreSQL takes a turn's redemptions of one kind at once,
    // begins a code's refresh chain and is committed alone; on SQLite the chain is a second statement, in the
    // transaction a turn's redemptions share.
    const clientId = (await create(admin, { name: 'Counted', redirect_uris: [REDIRECT] }).expect(201)).body.oauth_client
      .client_id as string;
    const { code, verifier } = await allowedCode(t, member, { clientId, redirectUri: REDIRECT, resource: AUDIENCE });
    const dataSource = t.get(DataSource);
    const transaction = (redemption: string, ...then: string[]) =>
      DATABASE_KIND === 'postgres'
        ? [
            expect.stringMatching(
              new RegExp(`^WITH v AS \\(SELECT .* changed AS \\(UPDATE ${redemption.split(' ')[0]} `),
            ),
          ]
        : [
            expect.stringMatching(/^BEGIN TRANSACTION$/),
            expect.stringMatching(new RegExp(`^UPDATE ${redemption}`)),
            ...then.map((statement) => expect.stringMatching(new RegExp(`^${statement}`))),
            'COMMIT',
          ];
    let refreshToken = '';
    const redeemed = await statementsDuring(dataSource, async () => {
      const issued = await tokenRequest(t, {
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_verifier: verifier,
      }).expect(200);
      refreshToken = issued.body.refresh_token as string;
    });
    expect(redeemed).toEqual(transaction('oauth_codes SET used_at', 'INSERT INTO oauth_refresh_chains '));
    for (let round = 0; round < 2; round += 1) {
      const refreshed = await statementsDuring(dataSource, async () => {
        const issued = await tokenRequest(t, {
          grant_type: 'refresh_token',
          refresh_token: refreshToken,
          client_id: clientId,
        }).expect(200);
        refreshToken = issued.body.refresh_token as string;
      });
      expect(refreshed).toEqual(transaction('oauth_refresh_chains SET token_hash'));
    }
    // The grant's last use is the batched writer's, shown at once.
    const { body } = await t.http().get('/v1/grants').set(bearer(member.token)).expect(200);
    const grant = body.grants.find((g: { client_id: string }) => g.client_id === clientId);
    expect(grant.last_used_at).toEqual(expect.any(String));
  });

  it("refuses a code at once once its grant is revoked or its person removed: the redemption's own check", async () => {
    const clientId = (await create(admin, { name: 'Checked', redirect_uris: [REDIRECT] }).expect(201)).body.oauth_client
      .client_id as string;
    const request = { clientId, redirectUri: REDIRECT, resource: AUDIENCE };
    const redeem = (code: string, verifier: string) =>
      tokenRequest(t, {
        grant_type: 'authorization_code',
        code,
        client_id: clientId,
        redirect_uri: REDIRECT,
        code_verifier: verifier,
      });
    const revoking = await t.user({ org: 'internal', role: 'member' });
    const pending = await allowedCode(t, revoking, request);
    const grants = (await t.http().get('/v1/grants').set(bearer(revoking.token)).expect(200)).body.grants;
    await t
      .http()
      .delete(`/v1/grants/${grants[0].id as string}`)
      .set(bearer(revoking.token))
      .expect(200);
    const revoked = await redeem(pending.code, pending.verifier).expect(400);
    expect(revoked.body).toEqual({
      error: 'invalid_grant',
      error_description: 'the grant was revoked',
      reason: 'grant_revoked',
    });

    const leaving = await t.user({ org: 'internal', role: 'member' });
    const left = await allowedCode(t, leaving, request);
    await t.get(MembersService).remove(leaving.organizationId, leaving.userId);
    expect((await redeem(left.code, left.verifier).expect(400)).body.reason).toBe('grant_revoked');
    // Neither request issued a refresh token.
    const [{ n }] = await t.get(DataSource).query(
      `SELECT COUNT(*) AS n FROM oauth_refresh_chains r JOIN oauth_grants g ON g.id = r.grant_id
         WHERE g.client_id = '${clientId}'`,
    );
    expect(Number(n)).toBe(0);
  });

  it('a confidential one authenticates at the token endpoint, by HTTP Basic or the form; a code outlives a refused authentication', async () => {
    const created = (
      await create(admin, { name: 'Reports', redirect_uris: [REDIRECT], confidential: true }).expect(201)
    ).body;
    const clientId = created.oauth_client.client_id as string;
    const secret = created.client_secret as string;
    const request = { clientId, redirectUri: REDIRECT, resource: AUDIENCE };
    const redeem = (code: string, verifier: string, auth: { form?: string; basic?: string }) =>
      tokenRequest(
        t,
        {
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT,
          code_verifier: verifier,
          ...(auth.basic === undefined ? { client_id: clientId } : {}),
          ...(auth.form === undefined ? {} : { client_secret: auth.form }),
        },
        auth.basic === undefined ? undefined : basic(clientId, auth.basic),
      );

    const first = await allowedCode(t, member, request);
    const missing = await redeem(first.code, first.verifier, {}).expect(401);
    expect(missing.body).toEqual({
      error: 'invalid_client',
      error_description: 'this client authenticates: HTTP Basic, or client_id and client_secret',
      reason: 'client_authentication_missing',
    });
    const wrong = await redeem(first.code, first.verifier, { basic: `${secret}x` }).expect(401);
    expect(wrong.body).toEqual({
      error: 'invalid_client',
      error_description: 'invalid client credentials',
      reason: 'client_secret_invalid',
    });
    expect(wrong.headers['www-authenticate']).toBe('Basic realm="gatehouse"');
    // The client was refused before the code was looked at: the code still works once.
    const byBasic = await redeem(first.code, first.verifier, { basic: secret }).expect(200);
    const second = await allowedCode(t, member, request);
    await redeem(second.code, second.verifier, { form: secret }).expect(200);
    // Its refresh needs the secret too.
    const refresh = (auth?: string, form: Record<string, string> = {}) =>
      tokenRequest(t, { grant_type: 'refresh_token', refresh_token: byBasic.body.refresh_token, ...form }, auth);
    expect((await refresh(undefined, { client_id: clientId })).body.reason).toBe('client_authentication_missing');
    await refresh(basic(clientId, secret)).expect(200);
  });

  it('removing one revokes its grants at once and ends its refresh tokens; audited', async () => {
    const clientId = (await create(admin, { name: 'Short-lived', redirect_uris: [REDIRECT] }).expect(201)).body
      .oauth_client.client_id as string;
    const request = { clientId, redirectUri: REDIRECT, resource: AUDIENCE };
    const { code, verifier } = await allowedCode(t, member, request);
    const issued = await tokenRequest(t, {
      grant_type: 'authorization_code',
      code,
      client_id: clientId,
      redirect_uri: REDIRECT,
      code_verifier: verifier,
    }).expect(200);
    expect((await introspect(issued.body.access_token)).body.active).toBe(true);
    const grantId = decodeJwt(issued.body.access_token).payload.grant_id as string;
    const removed = await t.http().delete(`${ROUTE}/${clientId}`).set(bearer(admin.token)).expect(200);
    expect(removed.body.oauth_client.client_id).toBe(clientId);
    expect((await introspect(issued.body.access_token)).body).toEqual({ active: false });
    const refused = await tokenRequest(t, {
      grant_type: 'refresh_token',
      refresh_token: issued.body.refresh_token,
      client_id: clientId,
    }).expect(401);
    expect(refused.body.reason).toBe('client_unknown');
    const db = t.get(DataSource);
    expect(await db.query(`SELECT status FROM oauth_grants WHERE id = '${grantId}'`)).toEqual([{ status: 'revoked' }]);
    const audit = await db.query(
      `SELECT action, actor_user_id, reason FROM audit_events WHERE target_id IN ('${clientId}', '${grantId}')
       AND action IN ('grant.revoked', 'oauth_client.removed') ORDER BY action`,
    );
    expect(audit).toEqual([
      { action: 'grant.revoked', actor_user_id: null, reason: 'client_removed' },
      { action: 'oauth_client.removed', actor_user_id: admin.userId, reason: 'admin' },
    ]);
    // Gone: 404 the second time.
    await t.http().delete(`${ROUTE}/${clientId}`).set(bearer(admin.token)).expect(404);
  });
});
