import { randomUUID } from 'node:crypto';
import { MembersService } from '../../src/members/members.service';
import { AcceptedSubjectToken, SubjectTokenVerifier } from '../../src/federation/subject-token-verifier';
import type { TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { permissionMask } from '../../src/identity/roles';
import { credentialRefusal } from '../../src/auth/credential-liveness';
import type { KindStore } from '../../src/credentials/credential-kind';
import { CredentialKinds } from '../../src/credentials/credential-kinds';
import { CredentialUseRecorder } from '../../src/credentials/credential-use.recorder';
import { WorkloadIdentitiesService } from '../../src/workload-identities/workload-identities.service';
import { bearer } from '../support/http-assertions';
import { IdentityProvider } from '../support/identity-provider';
import { createTestApp, DATABASE_KIND, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';
import { createIdentity, IdentityBody, identityTokenAnswer, reachableBySubject } from './fixtures';

/**
 * What the token exchange asks of workload identities (docs/workload-identities.md#for-the-token-exchange), against a
 * live identity provider whose tokens SubjectTokenVerifier accepts: `matching` (the identity a verified token
 * matches), `recordUse` (its usage fields), and the credential core's kind store, which the token authenticator reads
 * on every request with a token minted through one. `matching` (an exchange without `client_id`) sees only identities
 * reachable by subject, those that existed before identities were named: the ones here are made so after their
 * creation, their entries with the audience entries had then.
 */
describe(`workload identity lookups for the token exchange on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let idp: IdentityProvider;
  let verifier: SubjectTokenVerifier;
  let identities: WorkloadIdentitiesService;
  let admin: TestUser;
  let member: TestUser;
  let entry: TrustedIssuer;
  let subjects = 0;

  beforeAll(async () => {
    [t, idp] = await Promise.all([
      createTestApp(),
      IdentityProvider.start({ workloadClaims: { repository: 'acme/deploy', ref: 'refs/heads/main' } }),
    ]);
    admin = await t.user({ org: 'wi-exchange', role: 'admin' });
    member = await t.user({ org: 'wi-exchange', role: 'member' });
    verifier = t.get(SubjectTokenVerifier);
    identities = t.get(WorkloadIdentitiesService);
    // An entry added before the per-organization default audience: Gatehouse's issuer URL.
    entry = await t.get(TrustedIssuersService).add({
      organization: 'wi-exchange',
      issuer: idp.issuer,
      kind: 'workloads',
      audience: TEST_ISSUER,
      emailDomains: [],
    });
  }, 30_000);
  afterAll(async () => {
    await IdentityProvider.stopAll();
    await t.close();
  });

  /**
   * An identity of `user` naming the provider's entry (or `issuer`), with no condition unless `fields` names some,
   * reachable by subject as the identities made before names were.
   */
  const identityOf = async (user: TestUser, fields: Record<string, unknown>, issuer: TrustedIssuer = entry) => {
    const identity = await createIdentity(t, user, issuer, { conditions: {}, ...fields });
    await reachableBySubject(t, identity.id);
    return identity;
  };

  /** A subject of its own per test: each sees only its own identities. */
  const newSubject = (): string => `repo:acme/deploy-${++subjects}:ref:refs/heads/main`;

  /** A token of the provider with these claims (aud Gatehouse's issuer), verified as the token exchange will. */
  async function verified(sub: string, claims: Record<string, unknown> = {}): Promise<AcceptedSubjectToken> {
    const now = Math.floor(Date.now() / 1000);
    const token = await idp.sign({ iss: idp.issuer, sub, aud: TEST_ISSUER, iat: now, exp: now + 300, ...claims });
    const outcome = await verifier.verify(token, 'workloads');
    if (!outcome.ok) throw new Error(`refused: ${outcome.reason} ${outcome.detail}`);
    return outcome;
  }

  const match = async (sub: string, claims: Record<string, unknown> = {}, nowMs?: number) => {
    const token = await verified(sub, claims);
    return identities.matching(token.issuers, token.claims, nowMs);
  };

  describe('matching', () => {
    it("a provider's own client-credentials token matches the identity of its sub and conditions", async () => {
      const identity = await identityOf(member, {
        subject: idp.workload.clientId,
        conditions: { repository: 'acme/deploy' },
        scopes: ['api_keys:read', 'integrations:read'],
      });
      const token = await verifier.verify(await idp.workloadToken(TEST_ISSUER), 'workloads');
      if (!token.ok) throw new Error(token.reason);
      expect(await identities.matching(token.issuers, token.claims)).toEqual({
        outcome: 'matched',
        identity: {
          id: identity.id,
          organizationId: member.organizationId,
          userId: member.userId,
          trustedIssuerId: entry.id,
          issuer: idp.issuer,
          subject: idp.workload.clientId,
          conditions: { repository: 'acme/deploy' },
          scopes: permissionMask(['api_keys:read', 'integrations:read']),
          expiresAtMs: null,
          role: 'member',
          accessTokenLifetime: 1800,
        },
      });
    });

    it('needs the exact sub and every condition', async () => {
      const sub = newSubject();
      await identityOf(member, { subject: sub, conditions: { environment: 'production' } });
      expect(await match(sub, { environment: 'staging' })).toEqual({ outcome: 'none' });
      expect(await match(sub)).toEqual({ outcome: 'none' });
      expect(await match(`${sub}:x`, { environment: 'production' })).toEqual({ outcome: 'none' });
      expect(await match(sub, { environment: 'production' })).toMatchObject({ outcome: 'matched' });
    });

    it('the most specific wins; equal specificity is ambiguous', async () => {
      const sub = newSubject();
      const broad = await identityOf(member, { subject: sub, conditions: {} });
      const narrow = await identityOf(admin, {
        subject: sub,
        conditions: { environment: 'production', workflow: 'deploy' },
      });
      const claims = { environment: 'production', workflow: 'deploy' };
      expect(await match(sub, claims)).toMatchObject({ outcome: 'matched', identity: { id: narrow.id } });
      expect(await match(sub, { environment: 'staging' })).toMatchObject({
        outcome: 'matched',
        identity: { id: broad.id },
      });
      const twin = await identityOf(member, {
        subject: sub,
        conditions: { environment: 'production', actor: 'octocat' },
      });
      const ambiguous = await match(sub, { ...claims, actor: 'octocat' });
      expect(ambiguous.outcome).toBe('ambiguous');
      expect(ambiguous.outcome === 'ambiguous' && ambiguous.candidates.map((c) => c.id).sort()).toEqual(
        [narrow.id, twin.id].sort(),
      );
    });

    it('leaves out revoked and expired identities, and those of a removed member', async () => {
      const sub = newSubject();
      const revoked = await identityOf(member, { subject: sub, conditions: { a: '1', b: '2' } });
      await t.http().delete(`/v1/workload-identities/${revoked.id}`).set(bearer(member.token)).expect(200);
      const expiring = await identityOf(member, {
        subject: sub,
        conditions: { a: '1' },
        expires_at: new Date(Date.now() + 120_000).toISOString(),
      });
      const claims = { a: '1', b: '2' };
      expect(await match(sub, claims)).toMatchObject({ outcome: 'matched', identity: { id: expiring.id } });
      expect(await match(sub, claims, Date.parse(expiring.expires_at!))).toEqual({ outcome: 'none' });

      const leaving = await t.user({ org: 'wi-exchange', role: 'member' });
      const theirs = await identityOf(leaving, { subject: newSubject() });
      expect(await match(theirs.subject)).toMatchObject({ outcome: 'matched' });
      await t.get(MembersService).remove(leaving.organizationId, leaving.userId);
      expect(await match(theirs.subject)).toEqual({ outcome: 'none' });
    });

    it("only the trusted entries the token was accepted for: another organization's audience is not this token's", async () => {
      const other = await t.user({ org: 'wi-exchange-elsewhere', role: 'admin' });
      const otherEntry = await t.get(TrustedIssuersService).add({
        organization: 'wi-exchange-elsewhere',
        issuer: idp.issuer,
        kind: 'workloads',
        audience: 'https://elsewhere.example.com',
        emailDomains: [],
      });
      const sub = newSubject();
      const ours = await identityOf(member, { subject: sub });
      await identityOf(other, { subject: sub, conditions: { environment: 'production' } }, otherEntry);
      const token = await verified(sub, { environment: 'production' });
      expect(token.issuers.map((accepted) => accepted.id)).toEqual([entry.id]);
      expect(await identities.matching(token.issuers, token.claims)).toMatchObject({
        outcome: 'matched',
        identity: { id: ours.id },
      });
      // A token for both audiences is accepted for both entries: matches in two organizations are ambiguous.
      const both = await verified(sub, { environment: 'production', aud: [TEST_ISSUER, otherEntry.audience] });
      expect(both.issuers.map((accepted) => accepted.id).sort()).toEqual([entry.id, otherEntry.id].sort());
      expect((await identities.matching(both.issuers, both.claims)).outcome).toBe('ambiguous');
    });

    it('never an identity created now: it is reached by its id only (client_id)', async () => {
      const sub = newSubject();
      const named = await createIdentity(t, member, entry, { subject: sub, conditions: {} });
      expect(await match(sub)).toEqual({ outcome: 'none' });
      const token = await verified(sub);
      expect(await identities.named(named.id, token.issuers, token.claims)).toMatchObject({
        outcome: 'matched',
        identity: { id: named.id },
      });
      // It neither takes nor blocks the token of an identity reachable by subject, even with more conditions.
      const existing = await identityOf(admin, { subject: sub });
      await createIdentity(t, member, entry, { subject: sub, conditions: { environment: 'production' } });
      expect(await match(sub, { environment: 'production' })).toMatchObject({
        outcome: 'matched',
        identity: { id: existing.id },
      });
    });

    it('no trusted entry: none', async () => {
      expect(await identities.matching([], { iss: idp.issuer, sub: 'x' })).toEqual({ outcome: 'none' });
    });
  });

  describe("a token minted through an identity: the kind store the token authenticator reads, and the API's answer", () => {
    let identity: IdentityBody;
    let store: KindStore;
    beforeAll(async () => {
      store = t.get(CredentialKinds).of('workload_identity')!;
      identity = await identityOf(member, {
        subject: newSubject(),
        scopes: ['api_keys:read'],
        expires_at: new Date(Date.now() + 3_600_000).toISOString(),
      });
    });

    it("an ACTIVE identity: its owner, scopes and expiry, and the owner's role read with it", async () => {
      expect(await store.read(identity.id)).toEqual({
        userId: member.userId,
        organizationId: member.organizationId,
        status: 'ACTIVE',
        scopes: permissionMask(['api_keys:read']),
        expiresAtMs: Date.parse(identity.expires_at!),
        allowedCidrs: null,
        rateLimit: null,
        ownerAccess: { role: 'member', accessTokenLifetime: 1800 },
      });
      // Any case of the id; lookups of one turn share a query.
      const many = await Promise.all([identity.id.toUpperCase(), identity.id, identity.id].map((id) => store.read(id)));
      expect(many.map((found) => found?.userId)).toEqual([member.userId, member.userId, member.userId]);
      expect(await identityTokenAnswer(t, identity, member)).toEqual({ status: 200 });
    });

    it('refused for another user or organization, an unknown or malformed id, and from its expiry on', async () => {
      const refusal = async (id: string, owner: Pick<TestUser, 'userId' | 'organizationId'>, nowMs = Date.now()) =>
        credentialRefusal(await store.read(id), owner, nowMs);
      expect(await refusal(identity.id, admin)).toBe('credential_not_found');
      expect(await refusal(identity.id, { ...member, organizationId: randomUUID() })).toBe('credential_not_found');
      expect(await refusal(randomUUID(), member)).toBe('credential_not_found');
      expect(await refusal('not-an-id', member)).toBe('credential_not_found');
      expect(await refusal(identity.id, member, Date.parse(identity.expires_at!) - 1)).toBeNull();
      expect(await refusal(identity.id, member, Date.parse(identity.expires_at!))).toBe('credential_expired');
      expect(await identityTokenAnswer(t, identity, admin)).toEqual({ status: 401, reason: 'credential_not_found' });
    });

    it('refused once revoked, and the role read now', async () => {
      const mine = await identityOf(admin, { subject: newSubject() });
      expect((await store.read(mine.id))?.ownerAccess?.role).toBe('admin');
      expect(await identityTokenAnswer(t, mine, admin)).toEqual({ status: 200 });
      await t.http().delete(`/v1/workload-identities/${mine.id}`).set(bearer(admin.token)).expect(200);
      expect(await identityTokenAnswer(t, mine, admin)).toEqual({ status: 401, reason: 'credential_revoked' });
    });
  });

  describe('recordUse', () => {
    it('shows a use at once, writes it in the next batch, never moves backwards', async () => {
      const identity = await identityOf(member, { subject: newSubject() });
      const read = async () =>
        (await t.http().get(`/v1/workload-identities/${identity.id}`).set(bearer(member.token)).expect(200)).body
          .workload_identity as IdentityBody;
      const at = new Date(Date.now() - 1000);
      identities.recordUse(identity.id, '203.0.113.7', at);
      expect(await read()).toMatchObject({ last_used_at: at.toISOString(), last_used_ip: '203.0.113.7' });
      await t.get(CredentialUseRecorder).flush();
      // An older use, recorded after: the stored one stays.
      identities.recordUse(identity.id, '198.51.100.1', new Date(at.getTime() - 60_000));
      await t.get(CredentialUseRecorder).flush();
      expect(await read()).toMatchObject({ last_used_at: at.toISOString(), last_used_ip: '203.0.113.7' });
      const listed = await t.http().get('/v1/organization/workload-identities').set(bearer(admin.token)).expect(200);
      expect(listed.body.workload_identities.find((i: IdentityBody) => i.id === identity.id)).toMatchObject({
        last_used_at: at.toISOString(),
        last_used_ip: '203.0.113.7',
      });
      identities.recordUse(identity.id, undefined);
      await t.get(CredentialUseRecorder).flush();
      expect((await read()).last_used_ip).toBeNull();
    });
  });
});
