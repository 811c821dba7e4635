import { createHash, randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { runTestCli } from '../support/cli';
import {
  apiKeyAuth,
  bearer,
  expectBearerRejected,
  expectError,
  expectInvalidArgument,
  ISO_MS,
  UUID,
} from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { SET_UP_TIMEOUT_MS } from '../support/timeouts';

/** The organization of a suite's test: an admin, a member and a viewer. */
interface Organization {
  name: string;
  admin: TestUser;
  member: TestUser;
  viewer: TestUser;
}

/**
 * The members of an organization over the API (docs/api.md#members): listed, invited with a one-time link that signs the
 * person in, given another role, removed, by its admins only (members:read, members:write), with the rules and audit
 * entries of the admin CLI (one MembersService): the last admin stays, a removal revokes every credential.
 */
describe(`members and invitations on ${DATABASE_KIND}`, () => {
  const BASE = 'https://gatehouse.example.com';
  let t: TestApp;
  let orgs = 0;

  beforeAll(async () => {
    t = await createTestApp({ env: { PUBLIC_BASE_URL: BASE, CONSOLE_SIGN_IN_FAILURE_LIMIT_PER_MINUTE: '1000' } });
  }, SET_UP_TIMEOUT_MS);
  afterAll(() => t.close());

  async function organization(): Promise<Organization> {
    const name = `people-${++orgs}`;
    return {
      name,
      admin: await t.user({ org: name, email: `admin-${orgs}@people.test`, role: 'admin' }),
      member: await t.user({ org: name, email: `member-${orgs}@people.test`, role: 'member' }),
      viewer: await t.user({ org: name, email: `viewer-${orgs}@people.test`, role: 'viewer' }),
    };
  }

  const list = (user: Pick<TestUser, 'token'>, query = '') =>
    t.http().get(`/v1/organization/members${query}`).set(bearer(user.token));
  const changeRole = (user: Pick<TestUser, 'token'>, id: string, role: unknown) =>
    t.http().patch(`/v1/organization/members/${id}`).set(bearer(user.token)).send({ role });
  const remove = (user: Pick<TestUser, 'token'>, id: string) =>
    t.http().delete(`/v1/organization/members/${id}`).set(bearer(user.token));
  const invite = (user: Pick<TestUser, 'token'>, body: Record<string, unknown>) =>
    t.http().post('/v1/organization/members/invitations').set(bearer(user.token)).send(body);
  const invitations = (user: Pick<TestUser, 'token'>) =>
    t.http().get('/v1/organization/members/invitations').set(bearer(user.token));
  const withdraw = (user: Pick<TestUser, 'token'>, id: string) =>
    t.http().delete(`/v1/organization/members/invitations/${id}`).set(bearer(user.token));
  const accept = (code: unknown) => t.http().post('/v1/console/invitations/accept').send({ code });
  const codeOf = (url: string): string => new URL(url).hash.replace(/^#invitation=/, '');
  const auditOf = (organizationId: string, prefix: string): Promise<Array<Record<string, unknown>>> =>
    t.get(DataSource).query(
      `SELECT action, reason, actor_user_id, actor_api_key_id, target_type, target_id, request_id FROM audit_events
         WHERE organization_id = '${organizationId}' AND action LIKE '${prefix}%' ORDER BY occurred_at, id`,
    );
  const roleOf = async (user: TestUser): Promise<string | null> => {
    const rows: Array<{ role: string }> = await t
      .get(DataSource)
      .query(
        `SELECT role FROM memberships WHERE organization_id = '${user.organizationId}' AND user_id = '${user.userId}'`,
      );
    return rows[0]?.role ?? null;
  };

  function expectRefusedInvitation(
    response: { status: number; body: unknown; headers: Record<string, string> },
    message: string,
    reason: string,
  ): void {
    expect({ status: response.status, body: response.body }).toStrictEqual({
      status: 401,
      body: { code: 'UNAUTHENTICATED', message, reason },
    });
    expect(response.headers['www-authenticate']).toBe('SignInLink realm="gatehouse"');
  }

  describe('listing', () => {
    it("lists the organization's members by e-mail address with role, joined and last console sign-in, paged", async () => {
      const org = await organization();
      await organization(); // another one, whose members are not listed
      const page = await list(org.admin).expect(200);
      expect(page.body).toStrictEqual({
        members: [org.admin, org.member, org.viewer].map((user) => ({
          user_id: user.userId,
          email: user.email,
          role: user.role,
          joined_at: expect.stringMatching(ISO_MS),
          last_signed_in_at: null,
        })),
        page: 1,
        limit: 20,
        total_count: 3,
      });
      const second = await list(org.admin, '?page=2&limit=2').expect(200);
      expect(second.body.members.map((member: { email: string }) => member.email)).toEqual([org.viewer.email]);
      expect(second.body.total_count).toBe(3);
      expectInvalidArgument(await list(org.admin, '?limit=0'));

      // A console sign-in is noted: the member's row says when.
      const link = await runTestCli(['console-link', '--org', org.name, '--email', org.member.email], t.env);
      const code = new URL(JSON.parse(link.stdout).url as string).hash.replace(/^#code=/, '');
      const before = Date.now();
      await t.http().post('/v1/console/sessions').send({ code }).expect(200);
      const after = (await list(org.admin).expect(200)).body.members as Array<Record<string, string>>;
      const signedIn = after.find((member) => member.user_id === org.member.userId)!;
      expect(Date.parse(signedIn.last_signed_in_at)).toBeGreaterThanOrEqual(before - 1000);
      expect(after.filter((member) => member.last_signed_in_at !== null)).toHaveLength(1);
    });

    it('a member or a viewer sees nothing of it, nor changes anything: 403 on every route, nothing written', async () => {
      const org = await organization();
      const { id } = (await invite(org.admin, { email: 'pending@people.test', role: 'viewer' }).expect(201)).body
        .invitation;
      const events = (await auditOf(org.admin.organizationId, '')).length;
      for (const user of [org.member, org.viewer]) {
        for (const response of [
          await list(user),
          await invitations(user),
          await changeRole(user, org.member.userId, 'admin'),
          await changeRole(user, user.userId, 'admin'),
          await remove(user, org.admin.userId),
          await invite(user, { email: 'someone@people.test', role: 'admin' }),
          await withdraw(user, id),
        ]) {
          expectError(response, 403, 'PERMISSION_DENIED', 'insufficient permissions', 'insufficient_permissions');
        }
      }
      expect(await roleOf(org.member)).toBe('member');
      expect((await invitations(org.admin).expect(200)).body.invitations).toHaveLength(1);
      expect((await auditOf(org.admin.organizationId, '')).length).toBe(events);
    });
  });

  describe('changing a role', () => {
    it('changes it at once, audited with the admin as actor; the same role changes and records nothing', async () => {
      const org = await organization();
      await t.http().post('/v1/organization/webhooks').set(bearer(org.member.token)).send({}).expect(403);
      const changed = await changeRole(org.admin, org.member.userId.toUpperCase(), 'admin')
        .set('X-Request-Id', 'promote-1')
        .expect(200);
      expect(changed.body).toStrictEqual({
        member: {
          user_id: org.member.userId,
          email: org.member.email,
          role: 'admin',
          joined_at: expect.stringMatching(ISO_MS),
          last_signed_in_at: null,
        },
      });
      // The member's own session token has the new role's permissions from the next request on.
      await list(org.member).expect(200);
      await changeRole(org.admin, org.member.userId, 'admin').expect(200);
      expect(await auditOf(org.admin.organizationId, 'member.')).toStrictEqual([
        {
          action: 'member.role_changed',
          reason: 'admin',
          actor_user_id: org.admin.userId,
          actor_api_key_id: null,
          target_type: 'user',
          target_id: org.member.userId,
          request_id: 'promote-1',
        },
      ]);
      // An admin's API key with members:write acts as the admin, and says which key.
      const key = await t.createKey(org.admin, 'people automation', { scopes: ['members:write'] });
      const token = await t.exchange(key.value);
      await changeRole({ token }, org.member.userId, 'viewer').expect(200);
      expect((await auditOf(org.admin.organizationId, 'member.')).at(-1)).toMatchObject({
        reason: 'viewer',
        actor_user_id: org.admin.userId,
        actor_api_key_id: key.id,
      });
      await list(org.member).expect(403);
    });

    it("keeps the organization's last admin: demoting them is 400 last_admin, until another admin exists", async () => {
      const org = await organization();
      for (const role of ['member', 'viewer']) {
        expectError(
          await changeRole(org.admin, org.admin.userId, role),
          400,
          'FAILED_PRECONDITION',
          'an organization keeps at least one admin: make another member an admin first',
          'last_admin',
        );
      }
      expect(await roleOf(org.admin)).toBe('admin');
      await changeRole(org.admin, org.viewer.userId, 'admin').expect(200);
      // Now either may step down, not both.
      await changeRole(org.admin, org.admin.userId, 'member').expect(200);
      expectError(
        await changeRole(org.viewer, org.viewer.userId, 'member'),
        400,
        'FAILED_PRECONDITION',
        'an organization keeps at least one admin: make another member an admin first',
        'last_admin',
      );
      expect(await auditOf(org.admin.organizationId, 'member.')).toEqual([
        expect.objectContaining({ action: 'member.role_changed', reason: 'admin', target_id: org.viewer.userId }),
        expect.objectContaining({ action: 'member.role_changed', reason: 'member', target_id: org.admin.userId }),
      ]);
    });

    it('two admins demoting each other at the same time: one change goes through, the other is refused', async () => {
      const org = await organization();
      const other = await t.user({ org: org.name, email: `second-admin-${orgs}@people.test`, role: 'admin' });
      const answers = await Promise.all([
        changeRole(org.admin, other.userId, 'member'),
        changeRole(other, org.admin.userId, 'member'),
      ]);
      // The other is last_admin (counted under the organization's lock), or 403 when its caller was demoted first.
      const statuses = answers.map((answer) => answer.status).sort();
      expect(statuses[0]).toBe(200);
      expect([400, 403]).toContain(statuses[1]);
      expect([await roleOf(org.admin), await roleOf(other)].sort()).toEqual(['admin', 'member']);
    });

    it("is 404 for a user who is not a member here, another organization's member included; a bad role is 400", async () => {
      const org = await organization();
      const elsewhere = await organization();
      for (const id of [elsewhere.member.userId, elsewhere.admin.userId, randomUUID()]) {
        expectError(await changeRole(org.admin, id, 'admin'), 404, 'NOT_FOUND', 'member not found', 'member_not_found');
      }
      expect(await roleOf(elsewhere.member)).toBe('member');
      expect(await auditOf(elsewhere.admin.organizationId, 'member.')).toEqual([]);
      for (const role of ['owner', 'Admin', null, undefined]) {
        expectInvalidArgument(await changeRole(org.admin, org.member.userId, role));
      }
      expectInvalidArgument(await changeRole(org.admin, 'not-an-id', 'admin'));
    });
  });

  describe('removing', () => {
    it('removes the member as remove-member does: keys revoked, sessions ended, audited with the admin as actor', async () => {
      const org = await organization();
      const keys = [await t.createKey(org.member, 'one'), await t.createKey(org.member, 'two')];
      const removed = await remove(org.admin, org.member.userId).set('X-Request-Id', 'remove-1').expect(200);
      expect(removed.body).toStrictEqual({
        member: {
          user_id: org.member.userId,
          email: org.member.email,
          role: 'member',
          joined_at: expect.stringMatching(ISO_MS),
          last_signed_in_at: null,
        },
        revoked_keys: 2,
      });
      expectBearerRejected(await t.http().get('/v1/user-api-keys').set(bearer(org.member.token)), 'member_removed');
      for (const key of keys) {
        expect((await t.http().post('/v1/token').set(apiKeyAuth(key.value))).status).toBe(401);
      }
      const audit = await auditOf(org.admin.organizationId, '');
      expect(audit.filter((event) => event.action === 'api_key.revoked').map((event) => event.reason)).toEqual([
        'member_removed',
        'member_removed',
      ]);
      expect(audit.filter((event) => event.action === 'member.removed')).toStrictEqual([
        {
          action: 'member.removed',
          reason: null,
          actor_user_id: org.admin.userId,
          actor_api_key_id: null,
          target_type: 'user',
          target_id: org.member.userId,
          request_id: 'remove-1',
        },
      ]);
      expect((await list(org.admin).expect(200)).body.total_count).toBe(2);
      // Gone: a second removal is 404.
      expectError(await remove(org.admin, org.member.userId), 404, 'NOT_FOUND', 'member not found', 'member_not_found');
    });

    it("keeps the last admin; another organization's member is 404 and keeps everything", async () => {
      const org = await organization();
      const elsewhere = await organization();
      const key = await t.createKey(elsewhere.member, 'kept');
      expectError(
        await remove(org.admin, org.admin.userId),
        400,
        'FAILED_PRECONDITION',
        'an organization keeps at least one admin: make another member an admin first',
        'last_admin',
      );
      for (const id of [elsewhere.member.userId, elsewhere.admin.userId]) {
        expectError(await remove(org.admin, id), 404, 'NOT_FOUND', 'member not found', 'member_not_found');
      }
      await t.http().post('/v1/token').set(apiKeyAuth(key.value)).expect(200);
      expect(await roleOf(elsewhere.member)).toBe('member');
      expect(await auditOf(elsewhere.admin.organizationId, '')).toEqual([
        expect.objectContaining({ action: 'api_key.created' }),
      ]);
      // With another admin, an admin may leave: their own session ends with it.
      await changeRole(org.admin, org.member.userId, 'admin').expect(200);
      await remove(org.admin, org.admin.userId).expect(200);
      expectBearerRejected(await list(org.admin), 'member_removed');
    });
  });

  describe('invitations', () => {
    it('invites by a one-time link shown once: using it makes the person a member with the role and signs them in', async () => {
      const org = await organization();
      const created = await invite(org.admin, { email: ' New.Person@People.TEST ', role: 'member' })
        .set('X-Request-Id', 'invite-1')
        .expect(201);
      const invitation = created.body.invitation;
      expect(invitation).toStrictEqual({
        id: expect.stringMatching(UUID),
        email: 'new.person@people.test',
        role: 'member',
        invited_by_user_id: org.admin.userId,
        created_at: expect.stringMatching(ISO_MS),
        expires_at: expect.stringMatching(ISO_MS),
        url: expect.stringMatching(new RegExp(`^${BASE}/console/sign-in#invitation=[A-Za-z0-9_-]{43}$`)),
      });
      expect(Date.parse(invitation.expires_at) - Date.parse(invitation.created_at)).toBe(7 * 24 * 3600 * 1000);
      const code = codeOf(invitation.url);
      // Listed without its link; only the code's hash is stored.
      const { url: _url, ...listed } = invitation;
      expect((await invitations(org.admin).expect(200)).body).toStrictEqual({ invitations: [listed] });
      const rows: Array<Record<string, unknown>> = await t.get(DataSource).query('SELECT * FROM member_invitations');
      expect(JSON.stringify(rows)).not.toContain(code);
      expect(rows.filter((row) => row.code_hash === createHash('sha256').update(code).digest('hex'))).toHaveLength(1);
      // Not a member until it is used.
      expect((await list(org.admin).expect(200)).body.total_count).toBe(3);

      const session = await accept(code).set('X-Request-Id', 'accept-1').expect(200);
      expect(session.headers['cache-control']).toBe('no-store');
      expect(session.body).toMatchObject({
        token_type: 'Bearer',
        expires_in: 3600,
        email: 'new.person@people.test',
        organization: { id: org.admin.organizationId, name: org.name },
        role: 'member',
      });
      const newcomer = session.body.user_id as string;
      await t.http().post('/v1/user-api-keys').set(bearer(session.body.session_token)).send({}).expect(201);
      const members = (await list(org.admin).expect(200)).body.members as Array<Record<string, unknown>>;
      expect(members.find((member) => member.user_id === newcomer)).toMatchObject({
        role: 'member',
        last_signed_in_at: expect.stringMatching(ISO_MS),
      });
      expect((await invitations(org.admin).expect(200)).body.invitations).toEqual([]);
      expect(
        (await auditOf(org.admin.organizationId, '')).filter((event) => event.target_id === newcomer),
      ).toStrictEqual([
        {
          action: 'member.invited',
          reason: 'member',
          actor_user_id: org.admin.userId,
          actor_api_key_id: null,
          target_type: 'user',
          target_id: newcomer,
          request_id: 'invite-1',
        },
        {
          action: 'member.added',
          reason: 'invitation',
          actor_user_id: newcomer,
          actor_api_key_id: null,
          target_type: 'user',
          target_id: newcomer,
          request_id: 'accept-1',
        },
        {
          action: 'console.signed_in',
          reason: 'invitation',
          actor_user_id: newcomer,
          actor_api_key_id: null,
          target_type: 'user',
          target_id: newcomer,
          request_id: 'accept-1',
        },
      ]);

      // Once: used again, it signs no one in.
      expectRefusedInvitation(await accept(code), 'invitation already used', 'invitation_used');
    });

    it('refuses an expired, withdrawn, replaced or unknown invitation (401), and a malformed body (400), using none', async () => {
      const org = await organization();
      const expired = codeOf(
        (await invite(org.admin, { email: 'late@people.test', role: 'viewer' })).body.invitation.url,
      );
      await t.get(DataSource).query(
        `UPDATE member_invitations SET expires_at = '${new Date(Date.now() - 1000).toISOString()}'
           WHERE code_hash = '${createHash('sha256').update(expired).digest('hex')}'`,
      );
      expectRefusedInvitation(await accept(expired), 'invitation expired', 'invitation_expired');

      const withdrawn = (await invite(org.admin, { email: 'withdrawn@people.test', role: 'viewer' })).body.invitation;
      const gone = await withdraw(org.admin, withdrawn.id).set('X-Request-Id', 'withdraw-1').expect(200);
      const { url: _url, ...shown } = withdrawn;
      expect(gone.body).toStrictEqual({ invitation: shown });
      expectRefusedInvitation(await accept(codeOf(withdrawn.url)), 'invitation invalid', 'invitation_invalid');
      expectError(
        await withdraw(org.admin, withdrawn.id),
        404,
        'NOT_FOUND',
        'invitation not found',
        'invitation_not_found',
      );
      expect(await auditOf(org.admin.organizationId, 'member.invitation_revoked')).toStrictEqual([
        {
          action: 'member.invitation_revoked',
          reason: 'viewer',
          actor_user_id: org.admin.userId,
          actor_api_key_id: null,
          target_type: 'user',
          target_id: expect.stringMatching(UUID),
          request_id: 'withdraw-1',
        },
      ]);

      // A new invitation of the same person replaces the last: its link no longer works.
      const first = (await invite(org.admin, { email: 'twice@people.test', role: 'viewer' })).body.invitation;
      const second = (await invite(org.admin, { email: 'twice@people.test', role: 'admin' })).body.invitation;
      expectRefusedInvitation(await accept(codeOf(first.url)), 'invitation invalid', 'invitation_invalid');
      // The expired one is not listed either.
      expect((await invitations(org.admin).expect(200)).body.invitations.map((i: { id: string }) => i.id)).toEqual([
        second.id,
      ]);

      expectRefusedInvitation(await accept('A'.repeat(43)), 'invitation invalid', 'invitation_invalid');
      expectRefusedInvitation(await accept('short'), 'invitation invalid', 'invitation_invalid');
      for (const body of [{ code: 42 }, {}, { code: second.url, extra: 1 }]) {
        expectInvalidArgument(await t.http().post('/v1/console/invitations/accept').send(body));
      }
      // None of these used the last one.
      expect((await accept(codeOf(second.url)).expect(200)).body.role).toBe('admin');
    });

    it("refuses a member already (member_exists) and a malformed address; another organization's admin withdraws nothing", async () => {
      const org = await organization();
      const elsewhere = await organization();
      expectError(
        await invite(org.admin, { email: org.member.email.toUpperCase(), role: 'admin' }),
        400,
        'FAILED_PRECONDITION',
        `${org.member.email} is a member already`,
        'member_exists',
      );
      for (const email of ['not-an-address', 'two@@x', 'a b@people.test']) {
        expectError(
          await invite(org.admin, { email, role: 'viewer' }),
          400,
          'INVALID_ARGUMENT',
          'email must be an e-mail address',
          'member_email_invalid',
        );
      }
      for (const body of [{ email: 'x@people.test' }, { email: 'x@people.test', role: 'owner' }, { role: 'viewer' }]) {
        expectInvalidArgument(await invite(org.admin, body));
      }
      const pending = (await invite(org.admin, { email: 'kept@people.test', role: 'viewer' }).expect(201)).body
        .invitation;
      expectError(
        await withdraw(elsewhere.admin, pending.id),
        404,
        'NOT_FOUND',
        'invitation not found',
        'invitation_not_found',
      );
      expect((await invitations(elsewhere.admin).expect(200)).body.invitations).toEqual([]);
      expect((await invitations(org.admin).expect(200)).body.invitations.map((i: { id: string }) => i.id)).toEqual([
        pending.id,
      ]);
      // The invitation works in the organization it was made for only.
      const session = await accept(codeOf(pending.url)).expect(200);
      expect(session.body.organization.id).toBe(org.admin.organizationId);
      expect(await auditOf(elsewhere.admin.organizationId, 'member.')).toEqual([]);
    });

    it('brings back a person an admin removed (as set-role does); a removal withdraws their pending invitation', async () => {
      const org = await organization();
      await remove(org.admin, org.viewer.userId).expect(200);
      const back = (await invite(org.admin, { email: org.viewer.email, role: 'viewer' }).expect(201)).body.invitation;
      const session = await accept(codeOf(back.url)).expect(200);
      expect(session.body).toMatchObject({ user_id: org.viewer.userId, role: 'viewer' });
      const removals: unknown[] = await t
        .get(DataSource)
        .query(`SELECT * FROM member_removals WHERE user_id = '${org.viewer.userId}'`);
      expect(removals).toEqual([]);

      // Invited, then made a member another way (single sign-on, the CLI) and removed: the invitation goes with them.
      const pending = (await invite(org.admin, { email: 'both@people.test', role: 'admin' }).expect(201)).body
        .invitation;
      const cli = await runTestCli(
        ['set-role', '--org', org.name, '--email', 'both@people.test', '--role', 'viewer'],
        t.env,
      );
      expect(cli.exitCode).toBe(0);
      const userId = JSON.parse(cli.stdout).user_id as string;
      await remove(org.admin, userId).expect(200);
      expectRefusedInvitation(await accept(codeOf(pending.url)), 'invitation invalid', 'invitation_invalid');
    });
  });
});
