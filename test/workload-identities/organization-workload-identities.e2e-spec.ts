import { randomUUID } from 'node:crypto';
import { MembersService } from '../../src/members/members.service';
import { DataSource } from 'typeorm';
import { runTestCli } from '../support/cli';
import type { TrustedIssuer } from '../../src/federation/trusted-issuer.entity';
import { IdentityService } from '../../src/identity/identity.service';
import { duringAuditFailure } from '../support/audit-failure';
import { bearer, expectError, expectInvalidArgument } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import {
  createIdentity,
  IDENTITY_FIELDS,
  IdentityBody,
  identityAudit,
  identityTokenAnswer,
  trustIssuer,
} from './fixtures';

interface Organization {
  name: string;
  admin: TestUser;
  member: TestUser;
  viewer: TestUser;
  issuer: TrustedIssuer;
  /** Every identity of the organization as its creation answered it, in creation order. */
  identities: IdentityBody[];
}

/**
 * Workload identities for the organization's admins (docs/workload-identities.md#organization-admins): every member's
 * listed and revoked as the organization's keys are, and a member's removal revokes theirs with their keys, in one
 * transaction.
 */
describe(`organization workload identities on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let orgs = 0;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t.close());

  const list = (user: Pick<TestUser, 'token'>, query: Record<string, string | number | boolean> = {}) =>
    t.http().get('/v1/organization/workload-identities').query(query).set(bearer(user.token));
  const revoke = (user: Pick<TestUser, 'token'>, id: string) =>
    t.http().delete(`/v1/organization/workload-identities/${id}`).set(bearer(user.token));
  const own = (user: Pick<TestUser, 'token'>, id: string) =>
    t.http().get(`/v1/workload-identities/${id}`).set(bearer(user.token));

  /** An admin with two identities, a member with two, a viewer with one (made while a member). */
  async function organization(): Promise<Organization> {
    const name = `wi-admin-org-${++orgs}`;
    const admin = await t.user({ org: name, role: 'admin' });
    const member = await t.user({ org: name, role: 'member' });
    const viewer = await t.user({ org: name, role: 'member' });
    const issuer = await trustIssuer(t, admin.organizationId);
    const identities: IdentityBody[] = [];
    for (const [user, label] of [
      [admin, 'admin 1'],
      [member, 'member 1'],
      [viewer, 'viewer 1'],
      [admin, 'admin 2'],
      [member, 'member 2'],
    ] as const) {
      identities.push(await createIdentity(t, user, issuer, { label }));
    }
    await t.get(IdentityService).setRole(viewer.organizationId, viewer.userId, 'viewer');
    return { name, admin, member, viewer: { ...viewer, role: 'viewer' }, issuer, identities };
  }

  describe('GET /v1/organization/workload-identities', () => {
    it("lists every member's identities of the caller's organization, newest first, with the owner's e-mail", async () => {
      const org = await organization();
      await organization();
      const { body } = await list(org.admin).expect(200);
      expect(body).toStrictEqual({ workload_identities: expect.any(Array), page: 1, limit: 20, total_count: 5 });
      expect(body.workload_identities.map((identity: IdentityBody) => identity.label)).toEqual([
        'member 2',
        'admin 2',
        'viewer 1',
        'member 1',
        'admin 1',
      ]);
      const emails = new Map([org.admin, org.member, org.viewer].map((user) => [user.userId, user.email]));
      for (const listed of body.workload_identities) {
        expect(Object.keys(listed).sort()).toEqual([...IDENTITY_FIELDS, 'owner_email', 'revoked_by'].sort());
        const created = org.identities.find((identity) => identity.id === listed.id)!;
        expect(listed).toStrictEqual({ ...created, owner_email: emails.get(created.user_id), revoked_by: null });
      }
    });

    it("narrows to one member by user_id or e-mail; both must name the same user; another org's user has none", async () => {
      const org = await organization();
      const other = await organization();
      const labels = async (query: Record<string, string>) =>
        (await list(org.admin, query).expect(200)).body.workload_identities.map((i: IdentityBody) => i.label);
      expect(await labels({ user_id: org.member.userId.toUpperCase() })).toEqual(['member 2', 'member 1']);
      expect(await labels({ email: org.member.email.toUpperCase() })).toEqual(['member 2', 'member 1']);
      expect(await labels({ user_id: org.member.userId, email: org.admin.email })).toEqual([]);
      expect(await labels({ email: 'nobody@example.com' })).toEqual([]);
      expect(await labels({ user_id: other.member.userId })).toEqual([]);
    });

    it('revoked identities only with include_revoked; pages like the owner list', async () => {
      const org = await organization();
      await revoke(org.admin, org.identities[0].id).expect(200);
      expect((await list(org.admin).expect(200)).body.total_count).toBe(4);
      const all = await list(org.admin, { include_revoked: true, limit: 2, page: 3 }).expect(200);
      expect(all.body).toMatchObject({ page: 3, limit: 2, total_count: 5 });
      expect(all.body.workload_identities).toEqual([
        expect.objectContaining({ id: org.identities[0].id, status: 'REVOKED' }),
      ]);
    });

    it.each<Record<string, string | number>>([
      { user_id: 'someone' },
      { email: 'not an address' },
      { limit: 0 },
      { include_revoked: 1 },
    ])('refuses the query %j', async (query) => {
      const org = await organization();
      expectInvalidArgument(await list(org.admin, query));
    });

    it('needs api_keys:manage: a member or a viewer is refused', async () => {
      const org = await organization();
      for (const user of [org.member, org.viewer]) {
        expectError(await list(user), 403, 'PERMISSION_DENIED', 'insufficient permissions', 'insufficient_permissions');
      }
    });
  });

  describe('DELETE /v1/organization/workload-identities/{id}', () => {
    it("revokes a member's identity, audited with reason admin; idempotent", async () => {
      const org = await organization();
      const target = org.identities[1];
      const { body } = await revoke(org.admin, target.id).expect(200);
      expect(body).toStrictEqual({
        workload_identity: {
          ...target,
          status: 'REVOKED',
          updated_at: expect.any(String),
          revoked_at: expect.stringMatching(/^\d{4}-\d{2}-\d{2}T/),
          owner_email: org.member.email,
          revoked_by: {
            at: expect.any(String),
            reason: 'admin',
            user_id: org.admin.userId,
            email: org.admin.email,
            api_key_id: null,
          },
        },
      });
      expect((await revoke(org.admin, target.id).expect(200)).body).toStrictEqual(body);
      expect((await own(org.member, target.id).expect(200)).body.workload_identity.status).toBe('REVOKED');
      expect((await identityAudit(t, target.id)).slice(1)).toEqual([
        {
          action: 'workload_identity.revoked',
          reason: 'admin',
          organization_id: org.admin.organizationId,
          actor_user_id: org.admin.userId,
          actor_api_key_id: null,
          target_type: 'workload_identity',
          target_id: target.id,
        },
      ]);
    });

    it("another organization's identity, or an unknown one, is 404 and stays as it was", async () => {
      const org = await organization();
      const other = await organization();
      for (const id of [other.identities[1].id, randomUUID()]) {
        expectError(
          await revoke(org.admin, id),
          404,
          'NOT_FOUND',
          'workload identity not found',
          'workload_identity_not_found',
        );
      }
      expect((await own(other.member, other.identities[1].id).expect(200)).body.workload_identity.status).toBe(
        'ACTIVE',
      );
      expect(await identityAudit(t, other.identities[1].id)).toHaveLength(1);
    });

    it('needs api_keys:manage', async () => {
      const org = await organization();
      expectError(
        await revoke(org.member, org.identities[0].id),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      expectInvalidArgument(await revoke(org.admin, 'nope'));
    });
  });

  describe("a member's removal", () => {
    it('revokes their identities with their keys in one transaction, audited member_removed; others keep theirs', async () => {
      const org = await organization();
      const key = await t.createKey(org.member, 'revoked too');
      const removal = await t.get(MembersService).remove(org.member.organizationId, org.member.userId);
      expect(removal).toEqual({
        removed: true,
        revokedKeys: 1,
        member: expect.objectContaining({ userId: org.member.userId, role: 'member' }),
      });
      const { body } = await list(org.admin, { include_revoked: true }).expect(200);
      const status = new Map(body.workload_identities.map((i: IdentityBody) => [i.id, i.status]));
      for (const identity of org.identities) {
        expect({ id: identity.label, status: status.get(identity.id) }).toEqual({
          id: identity.label,
          status: identity.user_id === org.member.userId ? 'REVOKED' : 'ACTIVE',
        });
      }
      for (const identity of org.identities.filter((i) => i.user_id === org.member.userId)) {
        expect((await identityAudit(t, identity.id)).slice(1)).toEqual([
          {
            action: 'workload_identity.revoked',
            reason: 'member_removed',
            organization_id: org.member.organizationId,
            actor_user_id: null,
            actor_api_key_id: null,
            target_type: 'workload_identity',
            target_id: identity.id,
          },
        ]);
      }
      // Their tokens stop (an admin's still work), and the key's revocation came with it.
      expect(await identityTokenAnswer(t, org.identities[1], org.member)).toEqual({
        status: 401,
        reason: 'member_removed',
      });
      expect(await identityTokenAnswer(t, org.identities[0], org.admin)).toEqual({ status: 200 });
      const keys = await t
        .http()
        .get('/v1/organization/api-keys')
        .query({ include_revoked: true, user_id: org.member.userId })
        .set(bearer(org.admin.token))
        .expect(200);
      expect(keys.body.api_keys.map((k: { id: string; status: string }) => [k.id, k.status])).toEqual([
        [key.id, 'REVOKED'],
      ]);
      // Added back, they find their identities still revoked.
      await t.get(IdentityService).setRole(org.member.organizationId, org.member.userId, 'member');
      expect(await identityTokenAnswer(t, org.identities[1], org.member)).toEqual({
        status: 401,
        reason: 'credential_revoked',
      });
    });

    it("the admin CLI's remove-member revokes them too; its output is unchanged", async () => {
      const org = await organization();
      const result = await runTestCli(['remove-member', '--org', org.name, '--email', org.member.email], t.env);
      expect(result.exitCode).toBe(0);
      expect(JSON.parse(result.stdout)).toStrictEqual({ removed: true, revoked_keys: 0 });
      const { body } = await list(org.admin, { user_id: org.member.userId, include_revoked: true }).expect(200);
      expect(body.workload_identities.map((i: IdentityBody) => i.status)).toEqual(['REVOKED', 'REVOKED']);
    });

    it("fails whole when an identity's audit entry fails: still a member, keys and identities ACTIVE", async () => {
      const org = await organization();
      const key = await t.createKey(org.member, 'stays');
      await expect(
        duringAuditFailure(t.get(DataSource), 'workload_identity.revoked', () =>
          t.get(MembersService).remove(org.member.organizationId, org.member.userId),
        ),
      ).rejects.toThrow();
      await t.http().get('/v1/user-api-keys').set(bearer(org.member.token)).expect(200);
      const keys = await t.http().get(`/v1/user-api-keys/${key.id}`).set(bearer(org.member.token)).expect(200);
      expect(keys.body.api_key.status).toBe('ACTIVE');
      const { body } = await list(org.admin, { user_id: org.member.userId }).expect(200);
      expect(body.workload_identities.map((i: IdentityBody) => i.status)).toEqual(['ACTIVE', 'ACTIVE']);
      expect(await identityAudit(t, org.identities[1].id)).toHaveLength(1);
    });

    it('a removal that finds no membership changes nothing', async () => {
      const org = await organization();
      const stranger = await t.user({ org: `wi-stranger-${orgs}` });
      const removal = await t.get(MembersService).remove(org.admin.organizationId, stranger.userId);
      expect(removal).toEqual({ removed: false, revokedKeys: 0 });
      expect((await list(org.admin).expect(200)).body.total_count).toBe(5);
    });
  });
});
