import { createLocalJWKSet, JSONWebKeySet, jwtVerify } from 'jose';
import { MembersService } from '../../src/members/members.service';
import type { TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { PollHub } from '../../src/ssf/poll-hub';
import { bearer } from '../support/http-assertions';
import { feedPoller } from '../support/revocation-feed';
import { createTestApp, DATABASE_KIND, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';
import { waitFor } from '../support/wait';
import { createIdentity, trustIssuer } from './fixtures';

const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';

/**
 * A workload identity's revocation reaches every verifier (docs/workload-identities.md#revocation): a CAEP
 * credential-change SET with credential_type workload_identity and the identity's id as an opaque subject, written by
 * the outbox with the audit entry, whichever path revoked it; verifiers then refuse the tokens whose client_id it is.
 */
describe(`workload identity revocations on the feed, ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let admin: TestUser;
  let issuer: TrustedIssuer;
  let stream: { clientId: string; clientSecret: string; audience: string };
  let jwks: ReturnType<typeof createLocalJWKSet>;

  beforeAll(async () => {
    t = await createTestApp({ env: { SSF_POLL_WAIT_SECONDS: '3' } });
    admin = await t.user({ org: 'wi-feed', role: 'admin' });
    issuer = await trustIssuer(t, admin.organizationId);
    const audience = 'https://wi-feed.example.com';
    stream = { ...(await t.get(ResourceServersService).register('Workload feed', audience)), audience };
    jwks = createLocalJWKSet((await t.http().get('/.well-known/jwks.json')).body as JSONWebKeySet);
    await drain();
  });
  afterAll(() => t.close());
  beforeEach(() => drain());

  const { poll, drain } = feedPoller(() => ({ app: t, stream }));

  /** The pending credential-change SETs, verified against the JWKS. */
  async function credentialChanges(): Promise<Array<Record<string, unknown>>> {
    const { body } = await poll({ returnImmediately: true, maxEvents: 1000 }).expect(200);
    const sets: Array<Record<string, unknown>> = [];
    for (const set of Object.values(body.sets as Record<string, string>)) {
      const { payload } = await jwtVerify(set, jwks, {
        issuer: TEST_ISSUER,
        audience: stream.audience,
        typ: 'secevent+jwt',
      });
      if (CREDENTIAL_CHANGE in (payload.events as object)) sets.push(payload);
    }
    return sets;
  }

  const revocationOf = (id: string, reason: string) =>
    expect.objectContaining({
      iss: TEST_ISSUER,
      aud: stream.audience,
      jti: expect.any(String),
      iat: expect.any(Number),
      sub_id: { format: 'opaque', id },
      events: {
        [CREDENTIAL_CHANGE]: {
          credential_type: 'workload_identity',
          change_type: 'revoke',
          event_timestamp: expect.any(Number),
          reason_admin: { en: reason },
        },
      },
    });

  it('creating one emits nothing', async () => {
    await createIdentity(t, admin, issuer);
    expect(await credentialChanges()).toEqual([]);
  });

  it("the owner's revocation: one credential-change; revoking again, none", async () => {
    const identity = await createIdentity(t, admin, issuer);
    await t.http().delete(`/v1/workload-identities/${identity.id}`).set(bearer(admin.token)).expect(200);
    expect(await credentialChanges()).toEqual([revocationOf(identity.id, 'user')]);
    await drain();
    await t.http().delete(`/v1/workload-identities/${identity.id}`).set(bearer(admin.token)).expect(200);
    expect(await credentialChanges()).toEqual([]);
  });

  it("an admin's revocation: reason admin", async () => {
    const member = await t.user({ org: 'wi-feed', role: 'member' });
    const identity = await createIdentity(t, member, issuer);
    await t.http().delete(`/v1/organization/workload-identities/${identity.id}`).set(bearer(admin.token)).expect(200);
    expect(await credentialChanges()).toEqual([revocationOf(identity.id, 'admin')]);
  });

  it("a member's removal: one per identity (reason member_removed) beside their keys'", async () => {
    const leaving = await t.user({ org: 'wi-feed', role: 'member' });
    const identities = [await createIdentity(t, leaving, issuer), await createIdentity(t, leaving, issuer)];
    const key = await t.createKey(leaving, 'also revoked');
    await t.get(MembersService).remove(leaving.organizationId, leaving.userId);
    const sets = await credentialChanges();
    expect(sets).toHaveLength(3);
    expect(sets).toEqual(
      expect.arrayContaining([
        ...identities.map((identity) => revocationOf(identity.id, 'member_removed')),
        expect.objectContaining({
          sub_id: { format: 'opaque', id: key.id },
          events: { [CREDENTIAL_CHANGE]: expect.objectContaining({ credential_type: 'api_key' }) },
        }),
      ]),
    );
  });

  it('a long poll is woken by a revocation', async () => {
    const identity = await createIdentity(t, admin, issuer);
    const started = Date.now();
    const waiting = Promise.resolve(poll({ returnImmediately: false, maxEvents: 10 }).expect(200));
    await waitFor('the long poll waiting', () => t.get(PollHub).count() === 1);
    await t.http().delete(`/v1/workload-identities/${identity.id}`).set(bearer(admin.token)).expect(200);
    const { body } = await waiting;
    expect(Date.now() - started).toBeLessThan(2500);
    expect(Object.keys(body.sets)).toHaveLength(1);
  });
});
