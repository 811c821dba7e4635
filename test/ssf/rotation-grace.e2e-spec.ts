import { createLocalJWKSet, JSONWebKeySet, jwtVerify } from 'jose';
import { DataSource } from 'typeorm';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { auditPage } from '../support/audit-events';
import { bearer, expectBearerRejected } from '../support/http-assertions';
import { pause } from '../support/wait';
import { failFeedEvents } from '../support/audit-failure';
import { feedPoller } from '../support/revocation-feed';
import { createTestApp, DATABASE_KIND, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';

/**
 * A rotation with a grace period (docs/adr/0031-revocation-feed-in-production.md): the feed reports the old key's new
 * expiry in the rotation's transaction, and a token minted before the rotation is refused everywhere once the grace
 * ends, though its own `exp` is later.
 */
const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
const FORM = 'application/x-www-form-urlencoded';
const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;
const seconds = (iso: string): number => Math.floor(Date.parse(iso) / 1000);

describe(`rotation grace on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  let server: { clientId: string; clientSecret: string };
  let jwks: ReturnType<typeof createLocalJWKSet>;
  const audience = 'https://grace.example.com';

  beforeAll(async () => {
    t = await createTestApp();
    admin = await t.user({ org: 'grace', role: 'admin' });
    server = await t.get(ResourceServersService).register('Grace', audience);
    jwks = createLocalJWKSet((await t.http().get('/.well-known/jwks.json')).body as JSONWebKeySet);
    await drain();
  });

  afterAll(() => t.close());
  beforeEach(() => drain());

  const { poll, drain } = feedPoller(() => ({ app: t, stream: server }));

  /** The pending credential-change SETs, each verified with jose against the JWKS. */
  async function credentialChanges(): Promise<Array<Record<string, unknown>>> {
    const { body } = await poll({ returnImmediately: true, maxEvents: 1000 }).expect(200);
    const payloads = [];
    for (const set of Object.values(body.sets as Record<string, string>)) {
      const { payload } = await jwtVerify(set, jwks, { issuer: TEST_ISSUER, audience, typ: 'secevent+jwt' });
      if (CREDENTIAL_CHANGE in (payload.events as object)) payloads.push(payload);
    }
    return payloads;
  }

  const rotate = (id: string, body: object) =>
    t.http().post(`/v1/user-api-keys/${id}/rotate`).set(bearer(admin.token)).send(body).expect(201);
  const introspect = (token: string) =>
    t
      .http()
      .post('/oauth/introspect')
      .type(FORM)
      .set('Authorization', basic(server.clientId, server.clientSecret))
      .send(new URLSearchParams({ token }).toString())
      .expect(200);
  const forwardAuth = (token: string) =>
    t
      .http()
      .get(`/v1/forward-auth?audience=${encodeURIComponent(audience)}`)
      .set(bearer(token));
  const ownApi = (token: string, id: string) => t.http().get(`/v1/user-api-keys/${id}`).set(bearer(token));

  it('writes a credential-change update for the old key with the grace end; the audit entry shows it', async () => {
    const key = await t.createKey(admin, 'graced');
    const { body } = await rotate(key.id, { grace_period_seconds: 600 });
    const graceEnd: string = body.previous_api_key.expires_at;
    expect(Date.parse(graceEnd) - Date.parse(body.api_key.created_at)).toBe(600_000);
    const [rotated] = (await auditPage(t, admin, { action: 'api_key.rotated', target_id: body.api_key.id }))
      .audit_events;
    expect(rotated).toMatchObject({ previous_api_key_id: key.id, previous_api_key_expires_at: graceEnd });
    const [set, ...others] = await credentialChanges();
    expect(others).toEqual([]);
    expect(set).toEqual({
      iss: TEST_ISSUER,
      aud: audience,
      iat: expect.any(Number),
      jti: expect.any(String),
      sub_id: { format: 'opaque', id: key.id },
      events: {
        [CREDENTIAL_CHANGE]: {
          credential_type: 'api_key',
          change_type: 'update',
          // The event's time is its audit entry's, written in the rotation's transaction (a moment after created_at).
          event_timestamp: seconds(rotated.occurred_at),
          reason_admin: { en: 'rotated' },
          expires_at: seconds(graceEnd),
        },
      },
    });
  });

  it("reports the old key's own expiry when it comes before the grace's end", async () => {
    const expiresAt = new Date(Date.now() + 120_000).toISOString();
    const key = await t.createKey(admin, 'expiring', { expires_at: expiresAt });
    const { body } = await rotate(key.id, { grace_period_seconds: 3600 });
    expect(body.previous_api_key.expires_at).toBe(expiresAt);
    const sets = await credentialChanges();
    expect(
      sets.map((set) => (set.events as Record<string, { expires_at: number }>)[CREDENTIAL_CHANGE].expires_at),
    ).toEqual([seconds(expiresAt)]);
  });

  it('a rotation without grace stays a revoke event only, with no audited expiry', async () => {
    const key = await t.createKey(admin, 'at once');
    const { body } = await rotate(key.id, { grace_period_seconds: 0 });
    const sets = await credentialChanges();
    expect(sets.map((set) => [set.sub_id, set.events])).toEqual([
      [
        { format: 'opaque', id: key.id },
        {
          [CREDENTIAL_CHANGE]: {
            credential_type: 'api_key',
            change_type: 'revoke',
            event_timestamp: expect.any(Number),
            reason_admin: { en: 'rotated' },
          },
        },
      ],
    ]);
    const [rotated] = (await auditPage(t, admin, { action: 'api_key.rotated', target_id: body.api_key.id }))
      .audit_events;
    expect(rotated).toMatchObject({ previous_api_key_id: key.id, previous_api_key_expires_at: null });
  });

  it('a rotation whose event cannot be written is not made (one transaction)', async () => {
    const dataSource = t.get(DataSource);
    const key = await t.createKey(admin, 'atomic');
    const allow = await failFeedEvents(dataSource);
    try {
      const response = await t
        .http()
        .post(`/v1/user-api-keys/${key.id}/rotate`)
        .set(bearer(admin.token))
        .send({ grace_period_seconds: 600 });
      expect(response.status).toBe(500);
    } finally {
      await allow();
    }
    const stored = await t.http().get(`/v1/user-api-keys/${key.id}`).set(bearer(admin.token)).expect(200);
    expect(stored.body.api_key).toMatchObject({ status: 'ACTIVE', expires_at: null, replaced_by: null });
    const rotations = await auditPage(t, admin, { action: 'api_key.rotated' });
    expect(rotations.audit_events.filter((event) => event.previous_api_key_id === key.id)).toEqual([]);
    expect(await credentialChanges()).toEqual([]);
  });

  it('a token minted before a 2 s grace is refused by introspection, forward auth and the API within 1 s of its end', async () => {
    const key = await t.createKey(admin, 'short grace');
    const forServer = await t.exchange(key.value, { resource: audience });
    const forGatehouse = await t.exchange(key.value);
    const { body } = await rotate(key.id, { grace_period_seconds: 2 });
    const graceEnd = Date.parse(body.previous_api_key.expires_at);
    expect(graceEnd - Date.parse(body.api_key.created_at)).toBe(2000);

    // Before the end: active, with `exp` the grace's end (the token's own is 30 minutes ahead).
    const active = await introspect(forServer);
    expect(active.body).toMatchObject({ active: true, client_id: key.id, exp: Math.floor(graceEnd / 1000) });
    // The feed says the same, so a verifier refuses the token by then too.
    const [set] = await credentialChanges();
    expect((set.events as Record<string, { expires_at: number }>)[CREDENTIAL_CHANGE].expires_at).toBe(
      Math.floor(graceEnd / 1000),
    );

    const checks = {
      introspection: async () => (await introspect(forServer)).body.active === true,
      'forward auth': async () => {
        const response = await forwardAuth(forServer);
        expect([200, 401]).toContain(response.status);
        return response.status === 200;
      },
      'own API': async () => {
        const response = await ownApi(forGatehouse, key.id);
        if (response.status !== 200) expectBearerRejected(response, 'credential_expired');
        return response.status === 200;
      },
    };
    const seen = new Map<string, { lastAcceptedSentAt?: number; refusedAt?: number }>(
      Object.keys(checks).map((name) => [name, {}]),
    );
    while ([...seen.values()].some((s) => s.refusedAt === undefined) && Date.now() < graceEnd + 3000) {
      await Promise.all(
        Object.entries(checks).map(async ([name, check]) => {
          const state = seen.get(name)!;
          if (state.refusedAt !== undefined) return;
          const sentAt = Date.now();
          if (await check()) state.lastAcceptedSentAt = sentAt;
          else state.refusedAt = Date.now();
        }),
      );
      await pause(25);
    }
    for (const [name, { lastAcceptedSentAt, refusedAt }] of seen) {
      // Accepted until the end, never after it; refused from the end on, and seen so within 1 s.
      expect([name, lastAcceptedSentAt! < graceEnd]).toEqual([name, true]);
      expect([name, refusedAt! >= graceEnd, refusedAt! - graceEnd < 1000]).toEqual([name, true, true]);
    }
    expect((await introspect(forServer)).body).toStrictEqual({ active: false });
  });
});
