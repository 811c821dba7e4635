import { decodeJwt } from 'jose';
import { DataSource } from 'typeorm';
import type { TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { TrustedIssuersService } from '../../src/federation/trusted-issuers.service';
import { bearer } from '../support/http-assertions';
import { IdentityProvider } from '../support/identity-provider';
import { createTestApp, DATABASE_KIND, TEST_ISSUER, TestApp, TestUser } from '../support/test-app';
import { SUBJECT_TOKEN_REFUSED as REFUSED, workloadForm } from '../support/token-exchange';
import { createIdentity, reachableBySubject, trustIssuer } from './fixtures';

/**
 * The tenant boundary of workload identities (docs/workload-identities.md#naming-the-identity, docs/adr/0043): a CI
 * issuer trusted by several organizations, and members of one organization, can neither take another's workload
 * tokens nor get them refused. A job names its identity (`client_id`); an organization's entry has an audience of its
 * own; the identities that existed before keep being matched by subject, and no identity made since joins them.
 */
describe(`workload identities across organizations and members on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let idp: IdentityProvider;
  /** Two organizations whose entries have the audience every entry had before (Gatehouse's issuer URL). */
  let acmeAdmin: TestUser;
  let acmeMember: TestUser;
  let globexMember: TestUser;
  let acmeEntry: TrustedIssuer;
  let globexEntry: TrustedIssuer;
  let subjects = 0;

  beforeAll(async () => {
    [t, idp] = await Promise.all([
      createTestApp({ env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '200' } }),
      IdentityProvider.start(),
    ]);
    acmeAdmin = await t.user({ org: 'tb-acme', role: 'admin' });
    acmeMember = await t.user({ org: 'tb-acme', role: 'member' });
    globexMember = await t.user({ org: 'tb-globex', role: 'member' });
    acmeEntry = await trustIssuer(t, acmeAdmin.organizationId, { issuer: idp.issuer, audience: TEST_ISSUER });
    globexEntry = await trustIssuer(t, globexMember.organizationId, { issuer: idp.issuer, audience: TEST_ISSUER });
  }, 30_000);
  afterAll(async () => {
    await IdentityProvider.stopAll();
    await t.close();
  });

  /** A CI job's subject of its own per test, in the form GitHub gives. */
  const newSubject = (): string => `repo:acme/app-${++subjects}:ref:refs/heads/main`;
  /** The provider's token for `sub`, with `aud` (by default the shared one) and other claims. */
  const tokenFor = (sub: string, claims: Record<string, unknown> = {}) => {
    const now = Math.floor(Date.now() / 1000);
    return idp.sign({ iss: idp.issuer, sub, aud: TEST_ISSUER, iat: now, exp: now + 300, ...claims });
  };
  const exchange = (subjectToken: string, extra: Record<string, string> = {}) =>
    t.http().post('/oauth/token').type('form').send(workloadForm(subjectToken, extra));
  /** Whose access token an exchange answered: its organization, member and identity. */
  const holder = (answer: { body: { access_token: string } }) => {
    const claims = decodeJwt(answer.body.access_token);
    return { org: claims.org, sub: claims.sub, client_id: claims.client_id };
  };
  const as = (user: TestUser, identityId: string) => ({
    org: user.organizationId,
    sub: user.userId,
    client_id: identityId,
  });
  /** The `token.exchange_failed` entries the request answered with `answer` wrote, in any organization. */
  const refusalsAudited = async (answer: { headers: Record<string, string> }) =>
    (
      await t.get(DataSource).query(
        `SELECT organization_id, reason, target_type, target_id FROM audit_events
          WHERE action = 'token.exchange_failed' AND request_id = '${answer.headers['x-request-id']}'
          ORDER BY organization_id`,
      )
    ).map((row: Record<string, unknown>) => ({ ...row }));
  const revoke = (user: TestUser, id: string) =>
    t.http().delete(`/v1/workload-identities/${id}`).set(bearer(user.token)).expect(200);

  describe('another organization trusting the same issuer with the same audience', () => {
    it("cannot block the job: the job names its identity and gets its own organization's token", async () => {
      const sub = newSubject();
      const ours = await createIdentity(t, acmeAdmin, acmeEntry, { subject: sub, conditions: {} });
      // Another organization's member copies the public subject.
      const theirs = await createIdentity(t, globexMember, globexEntry, { subject: sub, conditions: {} });
      const answer = await exchange(await tokenFor(sub), { client_id: ours.id });
      expect(answer.status).toBe(200);
      expect(holder(answer)).toEqual(as(acmeAdmin, ours.id));
      // Their copy serves them only when they name it themselves; it never reaches the job that does not.
      expect((await exchange(await tokenFor(sub))).body).toEqual(REFUSED);
      expect(theirs.organization_id).toBe(globexMember.organizationId);
    });

    it('cannot take the job once its identity is revoked or was never made: refused, audited where it belongs', async () => {
      const sub = newSubject();
      const ours = await createIdentity(t, acmeAdmin, acmeEntry, { subject: sub, conditions: {} });
      await createIdentity(t, globexMember, globexEntry, { subject: sub, conditions: {} });
      await revoke(acmeAdmin, ours.id);
      for (const form of [{ client_id: ours.id }, {}] as Array<Record<string, string>>) {
        const answer = await exchange(await tokenFor(sub), form);
        expect({ form, status: answer.status, body: answer.body }).toEqual({ form, status: 400, body: REFUSED });
      }
      // Named: the refusal is in the named identity's organization, with the reason (the caller never sees it).
      const named = await exchange(await tokenFor(sub), { client_id: ours.id });
      expect(await refusalsAudited(named)).toEqual([
        {
          organization_id: acmeAdmin.organizationId,
          reason: 'subject_token_workload_identity_not_usable',
          target_type: 'workload_identity',
          target_id: ours.id,
        },
      ]);
      // Never made: a token with a subject only the other organization has is refused too.
      const stranger = newSubject();
      await createIdentity(t, globexMember, globexEntry, { subject: stranger, conditions: {} });
      expect((await exchange(await tokenFor(stranger))).body).toEqual(REFUSED);
    });

    it('an identity that existed before keeps being matched without client_id, and a copy made since changes nothing', async () => {
      const sub = newSubject();
      const existing = await createIdentity(t, acmeAdmin, acmeEntry, { subject: sub, conditions: {} });
      await reachableBySubject(t, existing.id);
      const job = await exchange(await tokenFor(sub, { environment: 'production' }));
      expect(holder(job)).toEqual(as(acmeAdmin, existing.id));
      // Another organization's copy, even more specific: the job still gets its own token.
      await createIdentity(t, globexMember, globexEntry, { subject: sub, conditions: { environment: 'production' } });
      const again = await exchange(await tokenFor(sub, { environment: 'production' }));
      expect(again.status).toBe(200);
      expect(holder(again)).toEqual(as(acmeAdmin, existing.id));
      // Revoked: refused, never the copy's organization.
      await revoke(acmeAdmin, existing.id);
      expect((await exchange(await tokenFor(sub, { environment: 'production' }))).body).toEqual(REFUSED);
    });

    it('two identities of two organizations that both existed before: refused, audited in both organizations', async () => {
      const sub = newSubject();
      const ours = await createIdentity(t, acmeAdmin, acmeEntry, { subject: sub, conditions: {} });
      const theirs = await createIdentity(t, globexMember, globexEntry, { subject: sub, conditions: {} });
      await reachableBySubject(t, ours.id);
      await reachableBySubject(t, theirs.id);
      const answer = await exchange(await tokenFor(sub));
      expect([answer.status, answer.body]).toEqual([400, REFUSED]);
      expect(await refusalsAudited(answer)).toEqual(
        [acmeAdmin.organizationId, globexMember.organizationId].sort().map((organizationId) => ({
          organization_id: organizationId,
          reason: 'subject_token_ambiguous_workload_identity',
          target_type: null,
          target_id: null,
        })),
      );
    });
  });

  describe('a member of the same organization', () => {
    it("cannot make the admin's job get the member's token with a more specific copy, nor get it refused", async () => {
      const sub = newSubject();
      const admins = await createIdentity(t, acmeAdmin, acmeEntry, {
        subject: sub,
        conditions: {},
        scopes: ['api_keys:read'],
      });
      const copy = await createIdentity(t, acmeMember, acmeEntry, {
        subject: sub,
        conditions: { ref: 'refs/heads/main' },
        scopes: ['api_keys:read'],
      });
      const claims = { ref: 'refs/heads/main' };
      const answer = await exchange(await tokenFor(sub, claims), { client_id: admins.id });
      expect(answer.status).toBe(200);
      expect(holder(answer)).toEqual(as(acmeAdmin, admins.id));
      // The copy serves the member's own jobs, which name it.
      expect(holder(await exchange(await tokenFor(sub, claims), { client_id: copy.id }))).toEqual(
        as(acmeMember, copy.id),
      );
    });

    it("an admin's identity that existed before: a copy made since with one more condition is not matched", async () => {
      const sub = newSubject();
      const admins = await createIdentity(t, acmeAdmin, acmeEntry, { subject: sub, conditions: {} });
      await reachableBySubject(t, admins.id);
      await createIdentity(t, acmeMember, acmeEntry, { subject: sub, conditions: { ref: 'refs/heads/main' } });
      const answer = await exchange(await tokenFor(sub, { ref: 'refs/heads/main' }));
      expect(answer.status).toBe(200);
      expect(holder(answer)).toEqual(as(acmeAdmin, admins.id));
    });
  });

  describe('client_id', () => {
    it('a wrong, unknown or malformed client_id: the one invalid_grant, audited in the named identity’s organization', async () => {
      const sub = newSubject();
      const narrow = await createIdentity(t, acmeAdmin, acmeEntry, {
        subject: sub,
        conditions: { environment: 'production' },
      });
      const other = await createIdentity(t, acmeAdmin, acmeEntry, { subject: newSubject(), conditions: {} });
      const token = await tokenFor(sub, { environment: 'staging' });
      const cases: Array<[string, string, unknown[]]> = [
        [narrow.id, 'subject_token_workload_identity_conditions_not_met', [narrow.id]],
        [other.id, 'subject_token_workload_identity_wrong_subject', [other.id]],
        [narrow.id.toUpperCase(), 'subject_token_workload_identity_conditions_not_met', [narrow.id]],
      ];
      for (const [clientId, reason, [target]] of cases) {
        const answer = await exchange(token, { client_id: clientId });
        expect([answer.status, answer.body]).toEqual([400, REFUSED]);
        expect(await refusalsAudited(answer)).toEqual([
          {
            organization_id: acmeAdmin.organizationId,
            reason,
            target_type: 'workload_identity',
            target_id: target,
          },
        ]);
      }
      // Naming no identity there is: the same answer; the token's entries are two organizations', so no audit.
      for (const clientId of ['00000000-0000-4000-8000-000000000000', 'ci-job', '']) {
        const answer = await exchange(token, { client_id: clientId });
        expect({ clientId, status: answer.status, body: answer.body }).toEqual({
          clientId,
          status: 400,
          body: REFUSED,
        });
        expect(await refusalsAudited(answer)).toEqual([]);
      }
      // The named identity with a token that meets it.
      const ok = await exchange(await tokenFor(sub, { environment: 'production' }), { client_id: narrow.id });
      expect(holder(ok)).toEqual(as(acmeAdmin, narrow.id));
    });
  });

  describe("an organization's own audience", () => {
    let initechAdmin: TestUser;
    let umbrellaMember: TestUser;
    let initechEntry: TrustedIssuer;
    let umbrellaEntry: TrustedIssuer;

    beforeAll(async () => {
      initechAdmin = await t.user({ org: 'tb-initech', role: 'admin' });
      umbrellaMember = await t.user({ org: 'tb-umbrella', role: 'member' });
      const issuers = t.get(TrustedIssuersService);
      const add = (organization: string) =>
        issuers.add({ organization, issuer: idp.issuer, kind: 'workloads', emailDomains: [] });
      [initechEntry, umbrellaEntry] = [await add('tb-initech'), await add('tb-umbrella')];
    }, 30_000);

    it('is the default of a new entry: Gatehouse’s issuer URL and the organization’s id', () => {
      expect(initechEntry.audience).toBe(`${TEST_ISSUER}/organizations/${initechAdmin.organizationId}`);
      expect(umbrellaEntry.audience).toBe(`${TEST_ISSUER}/organizations/${umbrellaMember.organizationId}`);
    });

    it("a token asked for one organization becomes no other organization's token, even naming its identity", async () => {
      const sub = newSubject();
      const ours = await createIdentity(t, initechAdmin, initechEntry, { subject: sub, conditions: {} });
      const theirs = await createIdentity(t, umbrellaMember, umbrellaEntry, { subject: sub, conditions: {} });
      const token = await tokenFor(sub, { aud: initechEntry.audience });
      const taken = await exchange(token, { client_id: theirs.id });
      expect([taken.status, taken.body]).toEqual([400, REFUSED]);
      expect(await refusalsAudited(taken)).toEqual([
        {
          organization_id: umbrellaMember.organizationId,
          reason: 'subject_token_workload_identity_wrong_issuer',
          target_type: 'workload_identity',
          target_id: theirs.id,
        },
      ]);
      expect(holder(await exchange(token, { client_id: ours.id }))).toEqual(as(initechAdmin, ours.id));
      // Without client_id, an identity made now is not matched: refused, audited in the audience's organization.
      const unnamed = await exchange(token);
      expect([unnamed.status, unnamed.body]).toEqual([400, REFUSED]);
      expect(await refusalsAudited(unnamed)).toEqual([
        {
          organization_id: initechAdmin.organizationId,
          reason: 'subject_token_no_workload_identity',
          target_type: null,
          target_id: null,
        },
      ]);
    });
  });
});
