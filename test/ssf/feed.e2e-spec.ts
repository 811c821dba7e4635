import { createLocalJWKSet, decodeJwt, jwtVerify, JSONWebKeySet } from 'jose';
import { DataSource } from 'typeorm';
import { MembersService } from '../../src/members/members.service';
import { roleMask, scopeString } from '../../src/identity/roles';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { SsfDelivery } from '../../src/ssf/ssf-event.entity';
import { PollHub } from '../../src/ssf/poll-hub';
import { SsfRetention } from '../../src/ssf/ssf-retention';
import { failFeedEvents } from '../support/audit-failure';
import { feedPoller } from '../support/revocation-feed';
import { createTestApp, DATABASE_KIND, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';
import { waitFor } from '../support/wait';

/**
 * The revocation feed (docs/revocation-feed.md): CAEP events written with each change (the outbox), delivered by RFC
 * 8936 poll with acknowledgements and long poll, as SETs that verify against the JWKS.
 */
const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
const TOKEN_CLAIMS_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/token-claims-change';
const basic = (id: string, secret: string): string => `Basic ${Buffer.from(`${id}:${secret}`).toString('base64')}`;

interface Stream {
  clientId: string;
  clientSecret: string;
  audience: string;
}

describe(`revocation feed on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  let stream: Stream;
  let jwks: ReturnType<typeof createLocalJWKSet>;

  beforeAll(async () => {
    t = await createTestApp({ env: { SSF_POLL_WAIT_SECONDS: '3', EXPOSED_REPORT_MIN_RESPONSE_MS: '0' } });
    admin = await t.user({ org: 'feed', role: 'admin' });
    const audience = 'https://feed.example.com';
    stream = { ...(await t.get(ResourceServersService).register('Feed', audience)), audience };
    jwks = createLocalJWKSet((await t.http().get('/.well-known/jwks.json')).body as JSONWebKeySet);
    await drain();
  });

  afterAll(() => t.close());
  // Each test sees only its own events.
  beforeEach(() => drain());

  function poll(s: Stream, body: object = { returnImmediately: true }, app = t) {
    return app.http().post('/ssf/poll').set('Authorization', basic(s.clientId, s.clientSecret)).send(body);
  }

  const { drain } = feedPoller(() => ({ app: t, stream }));

  /** The pending SETs, verified against the JWKS, by jti. */
  async function received(s: Stream = stream, app = t): Promise<Map<string, Record<string, unknown>>> {
    const { body } = await poll(s, { returnImmediately: true, maxEvents: 1000 }, app).expect(200);
    const verified = new Map<string, Record<string, unknown>>();
    for (const [jti, set] of Object.entries(body.sets as Record<string, string>)) {
      const { payload, protectedHeader } = await jwtVerify(set, jwks, {
        issuer: TEST_ISSUER,
        audience: s.audience,
        typ: 'secevent+jwt',
      });
      expect(protectedHeader.alg).toBe('ES256');
      expect(payload.jti).toBe(jti);
      verified.set(jti, payload);
    }
    return verified;
  }

  const keyEvents = (sets: Map<string, Record<string, unknown>>) =>
    [...sets.values()].filter((set) => CREDENTIAL_CHANGE in (set.events as object));

  it("publishes the SSF 1.0 configuration and the caller's stream", async () => {
    const config = await t.http().get('/.well-known/ssf-configuration').expect(200);
    expect(config.body).toEqual({
      spec_version: '1_0',
      issuer: TEST_ISSUER,
      jwks_uri: 'http://localhost:3000/.well-known/jwks.json',
      delivery_methods_supported: ['urn:ietf:rfc:8936'],
      configuration_endpoint: 'http://localhost:3000/ssf/stream',
      authorization_schemes: [{ spec_urn: 'urn:ietf:rfc:6749' }],
      default_subjects: 'ALL',
    });
    const own = await t
      .http()
      .get('/ssf/stream')
      .set('Authorization', basic(stream.clientId, stream.clientSecret))
      .expect(200);
    expect(own.body).toEqual({
      stream_id: stream.clientId,
      iss: TEST_ISSUER,
      aud: stream.audience,
      delivery: { method: 'urn:ietf:rfc:8936', endpoint_url: 'http://localhost:3000/ssf/poll' },
      events_supported: [CREDENTIAL_CHANGE, TOKEN_CLAIMS_CHANGE],
      events_requested: [CREDENTIAL_CHANGE, TOKEN_CLAIMS_CHANGE],
      events_delivered: [CREDENTIAL_CHANGE, TOKEN_CLAIMS_CHANGE],
    });
    const refused = await t.http().get('/ssf/stream').set('Authorization', basic(stream.clientId, 'wrong'));
    expect([refused.status, refused.headers['www-authenticate']]).toEqual([401, 'Basic realm="gatehouse"']);
    expect((await t.http().post('/ssf/poll').send({})).status).toBe(401);
  });

  describe('every cause of a revocation emits a credential-change, with its reason', () => {
    it.each(['user', 'admin', 'exposed', 'rotated'])('%s', async (cause) => {
      const key = await t.createKey(admin, `cause ${cause}`);
      if (cause === 'rotated') {
        await t
          .http()
          .post(`/v1/user-api-keys/${key.id}/rotate`)
          .set('Authorization', `Bearer ${admin.token}`)
          .send({ grace_period_seconds: 0 })
          .expect(201);
      } else if (cause === 'user') {
        await t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${admin.token}`).expect(200);
      } else if (cause === 'admin') {
        await t
          .http()
          .delete(`/v1/organization/api-keys/${key.id}`)
          .set('Authorization', `Bearer ${admin.token}`)
          .expect(200);
      } else {
        await t
          .http()
          .post('/v1/api-keys/exposed')
          .send({ keys: [key.value] })
          .expect(202);
      }
      const sets = keyEvents(await received());
      expect(sets).toEqual([
        expect.objectContaining({
          iss: TEST_ISSUER,
          aud: stream.audience,
          iat: expect.any(Number),
          jti: expect.any(String),
          sub_id: { format: 'opaque', id: key.id },
          events: {
            [CREDENTIAL_CHANGE]: {
              credential_type: 'api_key',
              change_type: 'revoke',
              event_timestamp: expect.any(Number),
              reason_admin: { en: cause },
            },
          },
        }),
      ]);
      await drain();
    });

    it('a member removed: each key revoked, and a token-claims-change with no scope left', async () => {
      const leaving = await t.user({ org: 'feed', role: 'member' });
      const keys = [await t.createKey(leaving, 'one'), await t.createKey(leaving, 'two')];
      await t.get(MembersService).remove(leaving.organizationId, leaving.userId);
      const sets = [...(await received()).values()];
      expect(
        keyEvents(new Map(sets.map((s) => [s.jti as string, s])))
          .map((s) => (s.sub_id as { id: string }).id)
          .sort(),
      ).toEqual(keys.map((k) => k.id).sort());
      const claims = sets.filter((set) => TOKEN_CLAIMS_CHANGE in (set.events as object));
      expect(claims).toEqual([
        expect.objectContaining({
          sub_id: { format: 'iss_sub', iss: TEST_ISSUER, sub: leaving.userId },
          events: {
            [TOKEN_CLAIMS_CHANGE]: {
              event_timestamp: expect.any(Number),
              claims: { org: leaving.organizationId, scope: '' },
            },
          },
        }),
      ]);
      await drain();
    });

    it('a role change: a token-claims-change with what the role now allows; the same role again, nothing', async () => {
      const member = await t.user({ org: 'feed', role: 'admin' });
      await t.get(MembersService).setRole(member.organizationId, member.userId, 'viewer');
      await t.get(MembersService).setRole(member.organizationId, member.userId, 'viewer');
      const sets = [...(await received()).values()];
      expect(sets).toHaveLength(1);
      expect(sets[0].events).toEqual({
        [TOKEN_CLAIMS_CHANGE]: {
          event_timestamp: expect.any(Number),
          claims: { org: member.organizationId, scope: scopeString(roleMask('viewer')) },
        },
      });
      await drain();
    });
  });

  describe('RFC 8936 delivery', () => {
    it('redelivers what is not acknowledged (the same SET), never what is; moreAvailable past maxEvents', async () => {
      const keys = await Promise.all([1, 2, 3].map((i) => t.createKey(admin, `batch ${i}`)));
      for (const key of keys) {
        await t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${admin.token}`).expect(200);
      }
      const first = (await poll(stream, { returnImmediately: true, maxEvents: 2 }).expect(200)).body;
      expect(Object.keys(first.sets)).toHaveLength(2);
      expect(first.moreAvailable).toBe(true);
      const again = (await poll(stream, { returnImmediately: true, maxEvents: 2 }).expect(200)).body;
      expect(again.sets).toEqual(first.sets);
      const [one, two] = Object.keys(first.sets);
      const next = (await poll(stream, { returnImmediately: true, maxEvents: 2, ack: [one, two] }).expect(200)).body;
      expect(Object.keys(next.sets)).toHaveLength(1);
      expect(next.moreAvailable).toBe(false);
      expect(Object.keys(next.sets)).not.toContain(one);
      const [three] = Object.keys(next.sets);
      const errors = { [three]: { err: 'invalid_key', description: 'could not verify' } };
      const last = (await poll(stream, { returnImmediately: true, setErrs: errors }).expect(200)).body;
      expect(last).toEqual({ sets: {}, moreAvailable: false });
      const recorded = await t.get(DataSource).getRepository(SsfDelivery).findOneByOrFail({ id: three });
      expect(JSON.parse(recorded.error!)).toEqual({ err: 'invalid_key', description: 'could not verify' });
      expect(recorded.acknowledgedAt).not.toBeNull();
    });

    it('refuses a malformed poll with 400', async () => {
      for (const body of [
        { maxEvents: 0 },
        { maxEvents: 1001 },
        { returnImmediately: 'yes' },
        { ack: 'x' },
        { extra: 1 },
        [],
        { setErrs: { a: 1 } },
      ]) {
        const response = await poll(stream, body);
        expect([response.status, response.body.code]).toEqual([400, 'INVALID_ARGUMENT']);
      }
    });

    it('every stream gets every event, each with its own audience and jti', async () => {
      const other: Stream = {
        ...(await t.get(ResourceServersService).register('Other feed', 'https://other-feed.example.com')),
        audience: 'https://other-feed.example.com',
      };
      const key = await t.createKey(admin, 'two streams');
      await t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${admin.token}`).expect(200);
      const mine = keyEvents(await received(stream));
      const theirs = keyEvents(await received(other));
      expect(mine.map((s) => s.sub_id)).toEqual([{ format: 'opaque', id: key.id }]);
      expect(theirs.map((s) => s.sub_id)).toEqual([{ format: 'opaque', id: key.id }]);
      expect(theirs[0].jti).not.toBe(mine[0].jti);
      await drain();
    });

    it('a long poll answers as soon as an event is committed', async () => {
      const key = await t.createKey(admin, 'long poll');
      const started = Date.now();
      // Sent now (a supertest request starts when awaited), and waiting at the hub before the revocation.
      const waiting = Promise.resolve(poll(stream, { maxEvents: 10 }).expect(200));
      await waitFor('the long poll waiting', () => t.get(PollHub).count() === 1);
      await t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${admin.token}`).expect(200);
      const { body } = await waiting;
      const elapsed = Date.now() - started;
      expect(Object.values(body.sets).map((set) => decodeJwt(set as string).sub_id)).toEqual([
        { format: 'opaque', id: key.id },
      ]);
      expect(elapsed).toBeLessThan(2500);
      await drain();
    });

    it('an empty long poll answers with nothing after SSF_POLL_WAIT_SECONDS', async () => {
      const started = Date.now();
      const { body } = await poll(stream, {}).expect(200);
      expect(body).toEqual({ sets: {}, moreAvailable: false });
      expect(Date.now() - started).toBeGreaterThanOrEqual(2900);
    });
  });

  describe('the outbox', () => {
    it('a revocation whose event cannot be written is not made (one transaction)', async () => {
      const dataSource = t.get(DataSource);
      const key = await t.createKey(admin, 'atomic');
      const allow = await failFeedEvents(dataSource);
      try {
        const response = await t
          .http()
          .delete(`/v1/user-api-keys/${key.id}`)
          .set('Authorization', `Bearer ${admin.token}`);
        expect(response.status).toBe(500);
      } finally {
        await allow();
      }
      const stored = await t
        .http()
        .get(`/v1/user-api-keys/${key.id}`)
        .set('Authorization', `Bearer ${admin.token}`)
        .expect(200);
      expect(stored.body.api_key.status).toBe('ACTIVE');
      expect(keyEvents(await received())).toEqual([]);
    });

    it('concurrent revocations: one event each, none lost, none twice', async () => {
      const keys = await Promise.all(Array.from({ length: 12 }, (_, i) => t.createKey(admin, `concurrent ${i}`)));
      await Promise.all(
        keys.flatMap((key) => [
          t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${admin.token}`),
          t.http().delete(`/v1/organization/api-keys/${key.id}`).set('Authorization', `Bearer ${admin.token}`),
        ]),
      );
      const ids = keyEvents(await received()).map((set) => (set.sub_id as { id: string }).id);
      expect(ids.sort()).toEqual(keys.map((key) => key.id).sort());
      await drain();
    });

    it('survives a restart between the change and the poll: the next instance delivers it', async () => {
      const key = await t.createKey(admin, 'restart');
      await t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${admin.token}`).expect(200);
      const next = await createTestApp({ database: t.database, env: { SSF_POLL_WAIT_SECONDS: '1' } });
      try {
        const ids = keyEvents(await received(stream, next)).map((set) => (set.sub_id as { id: string }).id);
        expect(ids).toEqual([key.id]);
      } finally {
        await next.close();
      }
      await drain();
    });

    it('prunes events and deliveries past SSF_EVENT_RETENTION_DAYS', async () => {
      const key = await t.createKey(admin, 'pruned');
      await t.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${admin.token}`).expect(200);
      const inEightDays = new Date(Date.now() + 8 * 24 * 3600 * 1000);
      expect(await t.get(SsfRetention).prune(inEightDays)).toBeGreaterThanOrEqual(1);
      expect(keyEvents(await received())).toEqual([]);
    });
  });
});
