import { createServer as createHttpServer, Server } from 'node:http';
import { DataSource } from 'typeorm';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { bearer, expectError, expectInvalidArgument, ISO_MS, UUID } from '../support/http-assertions';
import { IdentityProvider } from '../support/identity-provider';
import { SplitOriginProvider } from '../support/split-origin-provider';
import { freePort, listenOnLoopback } from '../support/ports';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/**
 * An organization's single sign-on set up by its admins over the API (docs/api.md#single-sign-on-set-up): its people
 * issuer added, changed, tested and removed through federation's TrustedIssuersService, with the rules of
 * `trusted-issuer add` (discovery first, address rules, one organization per people issuer), never the client secret
 * shown back; members and other organizations' admins touch nothing.
 */
describe(`single sign-on set-up on ${DATABASE_KIND}`, () => {
  const BASE = 'https://gatehouse.example.com';
  let t: TestApp;
  let idp: IdentityProvider;
  let other: IdentityProvider;
  /** A discovery document without RFC 9207's `iss` (as Entra ID's, Google's, Okta's). */
  let plain: Server;
  let plainIssuer: string;
  let orgs = 0;

  beforeAll(async () => {
    [t, idp, other] = await Promise.all([
      createTestApp({ env: { PUBLIC_BASE_URL: BASE } }),
      IdentityProvider.start(),
      IdentityProvider.start(),
    ]);
    plain = createHttpServer((req, res) => {
      if (req.url !== '/.well-known/openid-configuration') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          issuer: plainIssuer,
          authorization_endpoint: `${plainIssuer}/authorize`,
          token_endpoint: `${plainIssuer}/token`,
          jwks_uri: `${plainIssuer}/keys`,
          id_token_signing_alg_values_supported: ['RS256'],
        }),
      );
    });
    plainIssuer = `http://127.0.0.1:${await listenOnLoopback(plain)}`;
  }, SET_UP_TIMEOUT_MS);
  afterAll(async () => {
    plain?.closeAllConnections();
    plain?.close();
    await IdentityProvider.stopAll();
    await t?.close();
  });

  async function organization(
    name = `sso-setup-${++orgs}`,
  ): Promise<{ name: string; admin: TestUser; member: TestUser }> {
    return {
      name,
      admin: await t.user({ org: name, role: 'admin' }),
      member: await t.user({ org: name, role: 'member' }),
    };
  }

  const get = (user: Pick<TestUser, 'token'>) =>
    t.http().get('/v1/organization/single-sign-on').set(bearer(user.token));
  const save = (user: Pick<TestUser, 'token'>, body: Record<string, unknown>) =>
    t.http().put('/v1/organization/single-sign-on').set(bearer(user.token)).send(body);
  const remove = (user: Pick<TestUser, 'token'>) =>
    t.http().delete('/v1/organization/single-sign-on').set(bearer(user.token));
  const test = (user: Pick<TestUser, 'token'>, body: Record<string, unknown>) =>
    t.http().post('/v1/organization/single-sign-on/test').set(bearer(user.token)).send(body);
  const people = (provider: IdentityProvider, more: Record<string, unknown> = {}) => ({
    issuer: provider.issuer,
    client_id: provider.people.clientId,
    client_secret: provider.people.clientSecret,
    ...more,
  });
  const auditOf = (organizationId: string): Promise<Array<Record<string, unknown>>> =>
    t.get(DataSource).query(
      `SELECT action, reason, actor_user_id, target_type, target_id FROM audit_events
         WHERE organization_id = '${organizationId}' AND action LIKE 'trusted_issuer.%' ORDER BY occurred_at, id`,
    );
  const storedSecret = async (organizationId: string): Promise<string | null> => {
    const issuers = t.get(TrustedIssuersService);
    const entry = await issuers.peopleIssuerOfOrganization(organizationId);
    return entry === null ? null : issuers.clientSecretOf(entry);
  };

  it('tests the connection: what the discovery document says and the redirect URI to register, nothing stored', async () => {
    const org = await organization();
    const found = await test(org.admin, { issuer: idp.issuer }).expect(200);
    expect(found.body).toStrictEqual({
      discovery: {
        issuer: idp.issuer,
        document_url: `${idp.issuer}/.well-known/openid-configuration`,
        authorization_endpoint: expect.stringMatching(new RegExp(`^${idp.issuer}/`)),
        token_endpoint: `${idp.issuer}/token`,
        jwks_uri: expect.stringMatching(new RegExp(`^${idp.issuer}/`)),
        token_endpoint_auth_methods: expect.arrayContaining(['client_secret_basic', 'client_secret_post']),
        id_token_signing_algs: expect.arrayContaining(['RS256']),
        // node-oidc-provider sends RFC 9207's `iss`: the shared redirect URI.
        iss_parameter_supported: true,
        redirect_uri: `${BASE}/v1/console/sso/callback`,
      },
    });
    // A provider without `iss`: the organization's own redirect URI, its name URL-encoded.
    const spaced = await organization(`Sso Setup ${orgs}`);
    expect((await test(spaced.admin, { issuer: plainIssuer }).expect(200)).body.discovery).toMatchObject({
      iss_parameter_supported: false,
      redirect_uri: `${BASE}/v1/console/sso/callback/Sso%20Setup%20${orgs}`,
    });
    expect((await get(org.admin).expect(200)).body).toStrictEqual({ single_sign_on: null });
    expect(await auditOf(org.admin.organizationId)).toEqual([]);
  });

  it('says what is wrong with an issuer: its shape, an address Gatehouse does not call, no answer, another issuer', async () => {
    const org = await organization();
    const unreachable = `http://127.0.0.1:${await freePort()}`;
    const cases: Array<[string, string, RegExp]> = [
      ['not a url', 'issuer_invalid', /^the issuer must be an absolute URL/],
      [`${idp.issuer}?tenant=1`, 'issuer_invalid', /no credentials, query, fragment or spaces/],
      // A private address, outside IDENTITY_PROVIDER_NETWORKS: refused before any request.
      ['https://10.1.2.3', 'issuer_discovery_failed', /private.*IDENTITY_PROVIDER_NETWORKS/],
      ['http://login.example.com', 'issuer_discovery_failed', /is not https:\/\//],
      [
        unreachable,
        'issuer_discovery_failed',
        new RegExp(`^cannot fetch ${unreachable}/\\.well-known/openid-configuration`),
      ],
      [
        `${idp.issuer}/`,
        'issuer_discovery_failed',
        /names "http:\/\/127\.0\.0\.1:\d+", not "http:\/\/127\.0\.0\.1:\d+\/"/,
      ],
    ];
    for (const [issuer, reason, message] of cases) {
      const answer = await test(org.admin, { issuer });
      expect({ issuer, status: answer.status, reason: answer.body.reason }).toEqual({ issuer, status: 400, reason });
      expect(answer.body.message).toMatch(message);
      // The reason and the message only: not the admin CLI's flags.
      expect(Object.keys(answer.body).sort()).toEqual(['code', 'message', 'reason']);
    }
    // The client authentication asked for must be one the issuer supports.
    const basicOnly = await test(org.admin, { issuer: plainIssuer, token_endpoint_auth: 'client_secret_post' });
    expect(basicOnly.body).toMatchObject({
      reason: 'issuer_discovery_failed',
      message: /does not support client_secret_post/,
    });
    expectInvalidArgument(await test(org.admin, { issuer: idp.issuer, token_endpoint_auth: 'private_key_jwt' }));
    expectInvalidArgument(await test(org.admin, {}));
  });

  it('adds the people issuer, never showing the secret back; changes it in place, the secret kept unless given', async () => {
    const org = await organization();
    const saved = await save(
      org.admin,
      people(idp, { email_domains: ['Acme.TEST', 'acme.test'], jit_role: 'viewer' }),
    ).expect(200);
    expect(saved.body).toStrictEqual({
      single_sign_on: {
        id: expect.stringMatching(UUID),
        issuer: idp.issuer,
        client_id: idp.people.clientId,
        token_endpoint_auth: 'client_secret_basic',
        email_domains: ['acme.test'],
        jit_role: 'viewer',
        allowed_origins: [],
        created_at: expect.stringMatching(ISO_MS),
      },
      redirect_uri: `${BASE}/v1/console/sso/callback`,
    });
    const id = saved.body.single_sign_on.id as string;
    expect(JSON.stringify(saved.body)).not.toContain(idp.people.clientSecret);
    expect((await get(org.admin).expect(200)).body).toStrictEqual({ single_sign_on: saved.body.single_sign_on });
    expect(await storedSecret(org.admin.organizationId)).toBe(idp.people.clientSecret);
    // Single sign-on works at once: the sign-in starts at the issuer.
    const start = await t.http().get(`/v1/console/sso?org=${org.name}`).expect(302);
    expect(start.headers.location).toMatch(new RegExp(`^${idp.issuer}/`));

    // Changed without a secret: the stored one stays; the same entry (its id), audited as updated.
    const { client_secret: _secret, ...withoutSecret } = people(idp, { token_endpoint_auth: 'client_secret_post' });
    const changed = await save(org.admin, withoutSecret).expect(200);
    expect(changed.body.single_sign_on).toMatchObject({
      id,
      token_endpoint_auth: 'client_secret_post',
      email_domains: [],
      jit_role: null,
    });
    expect(await storedSecret(org.admin.organizationId)).toBe(idp.people.clientSecret);
    // Another issuer, with its own client and secret.
    const moved = await save(org.admin, people(other)).expect(200);
    expect(moved.body.single_sign_on).toMatchObject({ id, issuer: other.issuer, client_id: other.people.clientId });
    expect(await storedSecret(org.admin.organizationId)).toBe(other.people.clientSecret);
    expect(await auditOf(org.admin.organizationId)).toStrictEqual(
      [
        ['trusted_issuer.added', 'people'],
        ['trusted_issuer.updated', 'people'],
        ['trusted_issuer.updated', 'people'],
      ].map(([action, reason]) => ({
        action,
        reason,
        actor_user_id: org.admin.userId,
        target_type: 'trusted_issuer',
        target_id: id,
      })),
    );

    // Removed: single sign-on ends; a second removal is 404.
    const removed = await remove(org.admin).expect(200);
    expect(removed.body.single_sign_on).toMatchObject({ id, issuer: other.issuer });
    expect((await get(org.admin).expect(200)).body).toStrictEqual({ single_sign_on: null });
    expectError(
      await t.http().get(`/v1/console/sso?org=${org.name}`),
      404,
      'NOT_FOUND',
      'no single sign-on for this organization',
      'sso_not_configured',
    );
    expectError(
      await remove(org.admin),
      404,
      'NOT_FOUND',
      'no single sign-on for this organization',
      'sso_not_configured',
    );
    expect((await auditOf(org.admin.organizationId)).at(-1)).toMatchObject({
      action: 'trusted_issuer.removed',
      actor_user_id: org.admin.userId,
    });
  });

  it('refuses what trusted-issuer add refuses, storing nothing', async () => {
    const org = await organization();
    const cases: Array<[Record<string, unknown>, string, RegExp]> = [
      [
        { issuer: idp.issuer, client_id: idp.people.clientId },
        'issuer_client_invalid',
        /needs a client id and a client secret/,
      ],
      [people(idp, { jit_role: 'member' }), 'jit_role_needs_email_domain', /^a just-in-time role needs e-mail domains/],
      [people(idp, { email_domains: ['not a domain'] }), 'email_domain_invalid', /^not a domain is not a domain name/],
      [people(idp, { client_secret: 'with space' }), 'issuer_client_invalid', /without spaces/],
      [people(idp, { client_id: 'with space' }), 'issuer_client_invalid', /client id must be 1 to 255 characters/],
      [people(idp, { issuer: 'https://10.1.2.3' }), 'issuer_discovery_failed', /private/],
    ];
    for (const [body, reason, message] of cases) {
      const answer = await save(org.admin, body);
      expect({ status: answer.status, reason: answer.body.reason }).toEqual({ status: 400, reason });
      expect(answer.body.message).toMatch(message);
    }
    for (const body of [{ ...people(idp), email_domains: 'acme.test' }, { ...people(idp), jit_role: 'owner' }, {}]) {
      expectInvalidArgument(await save(org.admin, body));
    }
    expect((await get(org.admin).expect(200)).body.single_sign_on).toBeNull();
    expect(await auditOf(org.admin.organizationId)).toEqual([]);
  });

  it("another organization's admin sees and changes only their own: a people issuer serves one organization", async () => {
    const org = await organization();
    const elsewhere = await organization();
    const fresh = await IdentityProvider.start();
    const saved = (await save(org.admin, people(fresh)).expect(200)).body.single_sign_on;
    expect((await get(elsewhere.admin).expect(200)).body).toStrictEqual({ single_sign_on: null });
    const taken = await save(elsewhere.admin, people(fresh));
    expect(taken.body).toMatchObject({
      code: 'FAILED_PRECONDITION',
      reason: 'people_issuer_taken',
      message: `${fresh.issuer} already signs in the people of another organization (a people issuer serves one organization)`,
    });
    // Nor by changing theirs to it.
    await save(elsewhere.admin, people(idp)).expect(200);
    expect((await save(elsewhere.admin, people(fresh))).body.reason).toBe('people_issuer_taken');
    await remove(elsewhere.admin).expect(200);
    expect((await get(org.admin).expect(200)).body.single_sign_on).toStrictEqual(saved);
    expect(await storedSecret(org.admin.organizationId)).toBe(fresh.people.clientSecret);
    expect((await auditOf(org.admin.organizationId)).map((event) => event.action)).toEqual(['trusted_issuer.added']);
  });

  it('a member sees nothing of it and changes nothing: 403 on every route', async () => {
    const org = await organization();
    const fresh = await IdentityProvider.start();
    await save(org.admin, people(fresh)).expect(200);
    for (const answer of [
      await get(org.member),
      await save(org.member, people(idp)),
      await remove(org.member),
      await test(org.member, { issuer: idp.issuer }),
    ]) {
      expectError(answer, 403, 'PERMISSION_DENIED', 'insufficient permissions', 'insufficient_permissions');
    }
    expect((await get(org.admin).expect(200)).body.single_sign_on.issuer).toBe(fresh.issuer);
  });

  it('sets the allowed origins as trusted-issuer set-origins does: checked, stored, audited with the admin', async () => {
    const org = await organization();
    const elsewhere = await organization();
    const setOrigins = (user: Pick<TestUser, 'token'>, origins: unknown) =>
      t
        .http()
        .put('/v1/organization/single-sign-on/allowed-origins')
        .set(bearer(user.token))
        .send({ allowed_origins: origins });
    const none = [404, 'NOT_FOUND', 'no single sign-on for this organization', 'sso_not_configured'] as const;
    expectError(await setOrigins(org.admin, []), ...none);
    // A provider whose key set moves to another origin, as Google's lives on www.googleapis.com.
    let jwksUri: string | undefined;
    let movingIssuer = '';
    const moving = createHttpServer((req, res) => {
      if (req.url !== '/.well-known/openid-configuration') return void res.writeHead(404).end();
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          issuer: movingIssuer,
          authorization_endpoint: `${movingIssuer}/authorize`,
          token_endpoint: `${movingIssuer}/token`,
          jwks_uri: jwksUri ?? `${movingIssuer}/keys`,
        }),
      );
    });
    movingIssuer = `http://127.0.0.1:${await listenOnLoopback(moving)}`;
    try {
      const saved = (
        await save(org.admin, { issuer: movingIssuer, client_id: 'gatehouse', client_secret: 'moving-secret' }).expect(
          200,
        )
      ).body.single_sign_on as Record<string, unknown>;
      const keysOrigin = new URL(idp.issuer).origin;
      jwksUri = `${keysOrigin}/keys`;
      // Without that origin the document no longer passes; an origin Gatehouse does not call is refused first.
      const refused = await setOrigins(org.admin, []);
      expect({ status: refused.status, reason: refused.body.reason }).toEqual({
        status: 400,
        reason: 'issuer_discovery_failed',
      });
      expect(refused.body.message).toMatch(new RegExp(`jwks_uri ${keysOrigin}/keys .* is on ${keysOrigin}`));
      const privateOrigin = await setOrigins(org.admin, ['https://10.1.2.3']);
      expect({ status: privateOrigin.status, reason: privateOrigin.body.reason }).toEqual({
        status: 400,
        reason: 'allowed_origin_invalid',
      });
      expect(privateOrigin.body.message).toMatch(/^https:\/\/10\.1\.2\.3 /);
      for (const origins of ['not a list', [7], Array.from({ length: 11 }, (_, i) => `https://k${i}.example.com`)]) {
        expectInvalidArgument(await setOrigins(org.admin, origins));
      }
      expect((await get(org.admin).expect(200)).body.single_sign_on.allowed_origins).toEqual([]);

      // Given once each, as origins.
      const set = await setOrigins(org.admin, [`${keysOrigin}/`, keysOrigin]).expect(200);
      expect(set.body).toStrictEqual({ single_sign_on: { ...saved, allowed_origins: [keysOrigin] } });
      expect((await get(org.admin).expect(200)).body).toStrictEqual(set.body);
      // The test of the connection uses them for the same issuer.
      await test(org.admin, { issuer: movingIssuer }).expect(200);
      // A member may not; another organization's admin reaches only their own (none).
      expectError(
        await setOrigins(org.member, []),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      expectError(await setOrigins(elsewhere.admin, [keysOrigin]), ...none);
      expect(await auditOf(org.admin.organizationId)).toStrictEqual(
        [
          ['trusted_issuer.added', 'people'],
          ['trusted_issuer.updated', 'allowed_origins'],
        ].map(([action, reason]) => ({
          action,
          reason,
          actor_user_id: org.admin.userId,
          target_type: 'trusted_issuer',
          target_id: saved.id,
        })),
      );
      // The provider back on its own origin: none again.
      jwksUri = undefined;
      expect((await setOrigins(org.admin, []).expect(200)).body.single_sign_on.allowed_origins).toEqual([]);
    } finally {
      moving.closeAllConnections();
      moving.close();
    }
  });

  it('sets up a provider whose endpoints are on another origin at once: the test names the origin, the save allows it', async () => {
    const org = await organization();
    const google = await SplitOriginProvider.start();
    try {
      const other = google.otherOrigin;
      // Without it: refused, naming the origin to allow (the console offers it); nothing stored.
      const refused = await test(org.admin, { issuer: google.issuer });
      expect(refused.body).toStrictEqual({
        code: 'FAILED_PRECONDITION',
        reason: 'issuer_discovery_failed',
        message: expect.stringMatching(new RegExp(`^the jwks_uri ${other}/oauth2/v3/certs .* is on ${other}, not`)),
        foreign_origin: other,
      });
      expect((await save(org.admin, people(idp, { issuer: google.issuer }))).body).toMatchObject({
        reason: 'issuer_discovery_failed',
        foreign_origin: other,
      });
      // An origin Gatehouse does not call, or too many, are refused as set-origins refuses them.
      expect(
        (await test(org.admin, { issuer: google.issuer, allowed_origins: ['https://10.1.2.3'] })).body,
      ).toMatchObject({
        reason: 'allowed_origin_invalid',
        message: expect.stringMatching(/^https:\/\/10\.1\.2\.3 /),
      });
      const eleven = Array.from({ length: 11 }, (_, i) => `https://k${i}.example.com`);
      expectInvalidArgument(await test(org.admin, { issuer: google.issuer, allowed_origins: eleven }));
      expectInvalidArgument(await save(org.admin, people(idp, { issuer: google.issuer, allowed_origins: eleven })));
      expect((await get(org.admin).expect(200)).body.single_sign_on).toBeNull();

      // With it: the test passes, and the first save stores it, audited as add --allow-origin is.
      const found = await test(org.admin, { issuer: google.issuer, allowed_origins: [other] }).expect(200);
      expect(found.body.discovery).toMatchObject({
        token_endpoint: `${other}/token`,
        jwks_uri: `${other}/oauth2/v3/certs`,
      });
      const body = { issuer: google.issuer, client_id: 'gatehouse', client_secret: 'google-secret' };
      const saved = await save(org.admin, { ...body, allowed_origins: [`${other}/`, other] }).expect(200);
      expect(saved.body.single_sign_on).toMatchObject({ issuer: google.issuer, allowed_origins: [other] });
      const id = saved.body.single_sign_on.id as string;
      const start = await t.http().get(`/v1/console/sso?org=${org.name}`).expect(302);
      expect(start.headers.location).toMatch(new RegExp(`^${google.issuer}/o/oauth2/v2/auth\\?`));
      // Saved again without the list: kept (same issuer); with the same list: unchanged, one entry.
      await save(org.admin, { issuer: google.issuer, client_id: 'gatehouse' }).expect(200);
      await save(org.admin, { issuer: google.issuer, client_id: 'gatehouse', allowed_origins: [other] }).expect(200);
      expect((await get(org.admin).expect(200)).body.single_sign_on.allowed_origins).toEqual([other]);
      // Emptied while the provider still needs it: refused, the stored list kept.
      expect((await save(org.admin, { ...body, allowed_origins: [] })).body.foreign_origin).toBe(other);
      expect((await get(org.admin).expect(200)).body.single_sign_on.allowed_origins).toEqual([other]);
      await save(org.admin, people(idp, { allowed_origins: [other] })).expect(200);
      await save(org.admin, people(idp, { allowed_origins: [] })).expect(200);
      const audit = await auditOf(org.admin.organizationId);
      const entry = (action: string, reason: string) => ({
        action,
        reason,
        actor_user_id: org.admin.userId,
        target_type: 'trusted_issuer',
        target_id: id,
      });
      expect(audit.slice(0, 3)).toStrictEqual([
        entry('trusted_issuer.added', 'people'),
        entry('trusted_issuer.updated', 'people'),
        entry('trusted_issuer.updated', 'people'),
      ]);
      // The issuer moved with the same list (one entry), then the list emptied (with set-origins' entry, same instant).
      expect(audit.slice(3).sort((a, b) => String(a.reason).localeCompare(String(b.reason)))).toStrictEqual([
        entry('trusted_issuer.updated', 'allowed_origins'),
        entry('trusted_issuer.updated', 'people'),
        entry('trusted_issuer.updated', 'people'),
      ]);
    } finally {
      google.stop();
    }
  });

  it('limits the discoveries one organization starts from the API: 10 a minute, then 429 with Retry-After', async () => {
    const org = await organization();
    const elsewhere = await organization();
    for (let i = 0; i < 10; i += 1) await test(org.admin, { issuer: plainIssuer }).expect(200);
    const refused = await test(org.admin, { issuer: plainIssuer });
    expectError(refused, 429, 'RESOURCE_EXHAUSTED', 'too many requests', 'too_many_issuer_tests');
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(1);
    // Saving counts too; another organization has its own.
    expect((await save(org.admin, people(idp))).status).toBe(429);
    await test(elsewhere.admin, { issuer: plainIssuer }).expect(200);
  });
});
