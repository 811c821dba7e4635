import { createLocalJWKSet, JSONWebKeySet, jwtVerify } from 'jose';
import { DataSource } from 'typeorm';
import type { CliResult } from '../../src/cli';
import { runTestCli } from '../support/cli';
import type { Environment } from '../../src/config/configuration';
import type { TrustedIssuerView } from '../../src/federation/trusted-issuer.command';
import { TrustedIssuerRemoval, TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { cliChecks } from '../support/cli';
import { bearer, expectError } from '../support/http-assertions';
import { IdentityProvider } from '../support/identity-provider';
import { feedPoller } from '../support/revocation-feed';
import { JWT_TYPE, SUBJECT_TOKEN_REFUSED as REFUSED, TOKEN_EXCHANGE_GRANT as GRANT } from '../support/token-exchange';
import {
  createTestApp,
  createTestDatabase,
  DATABASE_KIND,
  TEST_ISSUER,
  TestApp,
  TestDatabase,
  testEnvironment,
  TestUser,
} from '../support/test-app';
import { waitFor } from '../support/wait';
import { createIdentity, IdentityBody, identityAudit, trustIssuer } from '../workload-identities/fixtures';

const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
const ORDERS = 'https://orders.removal.example';

/**
 * `gatehouse trusted-issuer remove` revokes the workload identities that name the entry, in the removal's transaction,
 * as any revocation (docs/workload-identities.md#revocation): REVOKED, audited with reason `trusted_issuer_removed`, a
 * credential-change on the revocation feed, and the access tokens already minted through them refused at once.
 * Against a real identity provider (node-oidc-provider), whose client-credentials JWTs are the workload's tokens.
 */
describe(`removing a trusted issuer revokes its workload identities, ${DATABASE_KIND}`, () => {
  let database: TestDatabase;
  let env: Environment;
  let t: TestApp;
  let idp: IdentityProvider;
  let admin: TestUser;
  let member: TestUser;
  let stream: { clientId: string; clientSecret: string };
  let jwks: ReturnType<typeof createLocalJWKSet>;

  beforeAll(async () => {
    database = createTestDatabase();
    env = testEnvironment(database);
    [t, idp] = await Promise.all([createTestApp({ database }), IdentityProvider.start()]);
    admin = await t.user({ org: 'rm-acme', role: 'admin' });
    member = await t.user({ org: 'rm-acme', role: 'member' });
    stream = await t.get(ResourceServersService).register('Orders', ORDERS);
    jwks = createLocalJWKSet((await t.http().get('/.well-known/jwks.json')).body as JSONWebKeySet);
    await drain();
  }, 30_000);
  afterAll(async () => {
    await IdentityProvider.stopAll();
    await t.close();
    await database.drop();
  });

  const cli = (...argv: string[]): Promise<CliResult> => runTestCli(['trusted-issuer', ...argv], env);
  const { ok } = cliChecks(cli);
  type Removed = { removed: TrustedIssuerView; revoked_workload_identities: number };
  const addWorkloads = async (org: string, ...more: string[]) =>
    (
      await ok<{ trusted_issuer: TrustedIssuerView }>(
        'add',
        '--org',
        org,
        '--issuer',
        idp.issuer,
        '--kind',
        'workloads',
        ...more,
      )
    ).trusted_issuer;

  const exchange = (subjectToken: string, extra: Record<string, string> = {}) =>
    t
      .http()
      .post('/oauth/token')
      .type('form')
      .send({ grant_type: GRANT, subject_token: subjectToken, subject_token_type: JWT_TYPE, ...extra });
  const identity = async (user: TestUser, id: string): Promise<IdentityBody> =>
    (await t.http().get(`/v1/workload-identities/${id}`).set(bearer(user.token)).expect(200)).body.workload_identity;
  const introspect = async (token: string): Promise<boolean> =>
    (
      await t
        .http()
        .post('/oauth/introspect')
        .auth(stream.clientId, stream.clientSecret)
        .type('form')
        .send({ token })
        .expect(200)
    ).body.active as boolean;
  const forwardAuth = async (token: string): Promise<number> =>
    (
      await t
        .http()
        .get(`/v1/forward-auth?audience=${encodeURIComponent(ORDERS)}&scope=api_keys:read`)
        .set(bearer(token))
    ).status;

  const { poll, drain } = feedPoller(() => ({ app: t, stream }));
  /** The pending credential-change events, verified against the JWKS: [subject id, its event]. */
  async function credentialChanges(): Promise<Array<[string, Record<string, unknown>]>> {
    const { body } = await poll({ returnImmediately: true, maxEvents: 1000 }).expect(200);
    const changes: Array<[string, Record<string, unknown>]> = [];
    for (const set of Object.values(body.sets as Record<string, string>)) {
      const { payload } = await jwtVerify(set, jwks, { issuer: TEST_ISSUER, audience: ORDERS, typ: 'secevent+jwt' });
      const events = payload.events as Record<string, Record<string, unknown>>;
      if (CREDENTIAL_CHANGE in events) {
        changes.push([(payload.sub_id as { id: string }).id, events[CREDENTIAL_CHANGE]]);
      }
    }
    return changes.sort(([a], [b]) => a.localeCompare(b));
  }

  it("revokes the entry's identities in its transaction: REVOKED, audited, on the feed, their tokens refused at once", async () => {
    const entry = await addWorkloads('rm-acme');
    // Another organization trusts the same issuer with an audience of its own: its entry and identity stay.
    const globexAdmin = await t.user({ org: 'rm-globex', role: 'admin' });
    const globexEntry = await addWorkloads('rm-globex', '--audience', 'https://globex.gatehouse.test');

    const exchanged = await createIdentity(t, admin, entry, { subject: idp.workload.clientId, conditions: {} });
    const members = await createIdentity(t, member, entry, { subject: 'nightly-job', conditions: {} });
    const revokedBefore = await createIdentity(t, admin, entry, { subject: 'retired-job', conditions: {} });
    await t.http().delete(`/v1/workload-identities/${revokedBefore.id}`).set(bearer(admin.token)).expect(200);
    const elsewhere = await createIdentity(t, globexAdmin, globexEntry, {
      subject: idp.workload.clientId,
      conditions: {},
    });

    const subjectToken = await idp.workloadToken(entry.audience);
    const plain = (await exchange(subjectToken, { client_id: exchanged.id }).expect(200)).body.access_token as string;
    const forOrders = (await exchange(subjectToken, { client_id: exchanged.id, resource: ORDERS }).expect(200)).body
      .access_token as string;
    const globexToken = (
      await exchange(await idp.workloadToken(globexEntry.audience), { client_id: elsewhere.id }).expect(200)
    ).body.access_token as string;
    await t.http().get('/v1/user-api-keys').set(bearer(plain)).expect(200);
    expect(await introspect(forOrders)).toBe(true);
    expect(await forwardAuth(forOrders)).toBe(200);
    await drain();

    const removed = await ok<Removed>('remove', '--id', entry.id);
    expect(removed).toStrictEqual({ removed: entry, revoked_workload_identities: 2 });

    // Refused at once: Gatehouse's Bearer check, introspection and forward auth.
    expect((await t.http().get('/v1/user-api-keys').set(bearer(plain))).status).toBe(401);
    expect(await introspect(forOrders)).toBe(false);
    expect(await forwardAuth(forOrders)).toBe(401);
    // No new exchange through it, whatever the token.
    const again = await exchange(await idp.workloadToken(entry.audience), { client_id: exchanged.id });
    expect([again.status, again.body]).toEqual([400, REFUSED]);

    for (const [user, before] of [
      [admin, exchanged],
      [member, members],
    ] as const) {
      const id = before.id;
      const read = await identity(user, id);
      expect(read.status).toBe('REVOKED');
      expect(read.updated_at > before.updated_at).toBe(true);
      const rows: Array<{ revoked_at: unknown }> = await t
        .get(DataSource)
        .query(`SELECT revoked_at FROM workload_identities WHERE id = '${id}'`);
      expect(rows[0].revoked_at).not.toBeNull();
      expect((await identityAudit(t, id)).filter((event) => event.action === 'workload_identity.revoked')).toEqual([
        {
          action: 'workload_identity.revoked',
          reason: 'trusted_issuer_removed',
          organization_id: admin.organizationId,
          actor_user_id: null,
          actor_api_key_id: null,
          target_type: 'workload_identity',
          target_id: id,
        },
      ]);
    }
    // The one revoked before keeps its own revocation, recorded once.
    expect((await identityAudit(t, revokedBefore.id)).map(({ action, reason }) => [action, reason])).toEqual([
      ['workload_identity.created', null],
      ['workload_identity.revoked', 'user'],
    ]);

    // One credential-change per identity revoked, nothing for the others.
    expect(await credentialChanges()).toEqual(
      [exchanged.id, members.id].sort().map((id) => [
        id,
        {
          credential_type: 'workload_identity',
          change_type: 'revoke',
          reason_admin: { en: 'trusted_issuer_removed' },
          event_timestamp: expect.any(Number),
        },
      ]),
    );

    // The other organization's entry and identity are untouched, and its token still works.
    expect((await identity(globexAdmin, elsewhere.id)).status).toBe('ACTIVE');
    await t.http().get('/v1/user-api-keys').set(bearer(globexToken)).expect(200);
    expect((await exchange(await idp.workloadToken(globexEntry.audience), { client_id: elsewhere.id })).status).toBe(
      200,
    );

    // The removed entry can no longer be named by a new identity.
    const refused = await t
      .http()
      .post('/v1/workload-identities')
      .set(bearer(admin.token))
      .send({ label: 'late', trusted_issuer_id: entry.id, subject: 'late-job', scopes: [] });
    expectError(refused, 400, 'INVALID_ARGUMENT', 'trusted issuer not found', 'workload_identity_issuer_not_found');
  }, 30_000);

  it('an entry without identities: revoked_workload_identities 0, nothing on the feed', async () => {
    await t.user({ org: 'rm-initech' });
    const entry = await addWorkloads('rm-initech');
    await drain();
    expect(await ok<Removed>('remove', '--id', entry.id)).toStrictEqual({
      removed: entry,
      revoked_workload_identities: 0,
    });
    expect(await credentialChanges()).toEqual([]);
  });

  it('a creation that checked the entry before its removal and stores after it is refused, nothing left ACTIVE', async () => {
    const issuers = t.get(TrustedIssuersService);
    const entry = await trustIssuer(t, admin.organizationId, { issuer: 'https://ci.race.example' });
    // The removal runs, to its commit, between the creation's look-up of the entry and its transaction.
    let removal: Promise<TrustedIssuerRemoval> | undefined;
    const list = issuers.list.bind(issuers);
    jest.spyOn(issuers, 'list').mockImplementationOnce(async (organization) => {
      const found = await list(organization);
      removal = issuers.remove(entry.id);
      await removal;
      return found;
    });
    const created = await t
      .http()
      .post('/v1/workload-identities')
      .set(bearer(admin.token))
      .send({ label: 'racing', trusted_issuer_id: entry.id, subject: 'race-job', scopes: [] });
    expectError(created, 400, 'INVALID_ARGUMENT', 'trusted issuer not found', 'workload_identity_issuer_not_found');
    expect((await removal)?.revokedWorkloadIdentities).toBe(0);
    const rows: unknown[] = await t
      .get(DataSource)
      .query(`SELECT id FROM workload_identities WHERE trusted_issuer_id = '${entry.id}'`);
    expect(rows).toEqual([]);
    jest.restoreAllMocks();
  });

  it('a removal that starts while a creation holds the entry waits for it, and revokes what it stored', async () => {
    const issuers = t.get(TrustedIssuersService);
    const entry = await trustIssuer(t, admin.organizationId, { issuer: 'https://ci.wait.example' });
    let removal: Promise<TrustedIssuerRemoval> | undefined;
    let removedAt = 0;
    const hold = issuers.holdEntry.bind(issuers);
    jest.spyOn(issuers, 'holdEntry').mockImplementationOnce(async (organizationId, id, tx) => {
      const held = await hold(organizationId, id, tx);
      const holder =
        DATABASE_KIND === 'postgres' ? Number((await tx.query('SELECT pg_backend_pid() AS pid'))[0].pid) : 0;
      removal = issuers.remove(entry.id).then((done) => {
        removedAt = Date.now();
        return done;
      });
      // The removal has reached the entry: on PostgreSQL its DELETE waits for this transaction's hold; on SQLite it
      // is queued behind this transaction from the call on.
      if (DATABASE_KIND === 'postgres') {
        await waitFor('the removal waiting for the hold', async () => {
          const [{ waiting }]: Array<{ waiting: number }> = await t
            .get(DataSource)
            .query('SELECT count(*)::int AS waiting FROM pg_stat_activity WHERE $1 = ANY(pg_blocking_pids(pid))', [
              holder,
            ]);
          return waiting > 0;
        });
      }
      return held;
    });
    const created = await t
      .http()
      .post('/v1/workload-identities')
      .set(bearer(admin.token))
      .send({ label: 'held', trusted_issuer_id: entry.id, subject: 'held-job', scopes: [] });
    const answeredAt = Date.now();
    expect(created.status).toBe(201);
    expect((await removal)?.revokedWorkloadIdentities).toBe(1);
    expect(removedAt).toBeGreaterThan(0);
    expect(removedAt).toBeGreaterThanOrEqual(answeredAt - 50);
    expect((await identity(admin, created.body.workload_identity.id as string)).status).toBe('REVOKED');
    jest.restoreAllMocks();
  });
});
