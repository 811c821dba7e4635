import { randomUUID } from 'node:crypto';
import { DataSource } from 'typeorm';
import { ApiKey } from '../../src/api-keys/api-key.entity';
import { runTestCli } from '../support/cli';
import { IdentityService } from '../../src/identity/identity.service';
import { KEY_RECORD_FIELDS } from '../support/api-key-records';
import {
  apiKeyAuth,
  bearer,
  expectApiKeyRejected,
  expectError,
  expectInvalidArgument,
  ISO_MS,
} from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

interface KeyBody {
  id: string;
  user_id: string;
  organization_id: string;
  status: string;
  created_at: string;
  updated_at: string;
  revoked_at?: string | null;
}

/** An organization with one user of each role, each with keys, and what was created. */
interface Organization {
  name: string;
  admin: TestUser;
  member: TestUser;
  viewer: TestUser;
  /** Every key of the organization as its creation answered it, in creation order. */
  keys: Array<KeyBody & { value: string }>;
}

/** Newest first: created_at, then id, both descending (docs/api.md#get-v1user-api-keys). */
function newestFirst<T extends Pick<KeyBody, 'id' | 'created_at'>>(keys: T[]): string[] {
  return [...keys]
    .sort((a, b) =>
      a.created_at === b.created_at ? b.id.localeCompare(a.id) : b.created_at.localeCompare(a.created_at),
    )
    .map((key) => key.id);
}

/**
 * Organization key management (docs/api.md#get-v1organizationapi-keys,
 * docs/api.md#delete-v1organizationapi-keysid): an admin (`api_keys:manage`) lists and revokes every
 * member's keys of the caller's organization, and nothing of another organization.
 */
describe(`organization key management on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let dataSource: DataSource;
  let orgs = 0;

  beforeAll(async () => {
    t = await createTestApp({ env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '100000' } });
    dataSource = t.get(DataSource);
  });
  afterAll(() => t.close());

  const list = (user: Pick<TestUser, 'token'>, query = '') =>
    t.http().get(`/v1/organization/api-keys${query}`).set(bearer(user.token));
  const revoke = (user: Pick<TestUser, 'token'>, id: string) =>
    t.http().delete(`/v1/organization/api-keys/${id}`).set(bearer(user.token));
  const ownKey = (user: TestUser, id: string) => t.http().get(`/v1/user-api-keys/${id}`).set(bearer(user.token));
  /** The key's entries in the audit trail (its changes; not the refused exchanges). */
  const auditOf = (id: string): Promise<Array<Record<string, unknown>>> =>
    dataSource.query(
      `SELECT action, reason, organization_id, actor_user_id, actor_api_key_id, target_type, target_id
       FROM audit_events WHERE target_id = '${id}' AND action LIKE 'api_key.%' ORDER BY occurred_at, id`,
    );

  /** A new organization: an admin with two keys, a member with two, a viewer with one (made while a member). */
  async function organization(name = `org-keys-${++orgs}`): Promise<Organization> {
    const admin = await t.user({ org: name, role: 'admin' });
    const member = await t.user({ org: name, role: 'member' });
    const viewer = await t.user({ org: name, role: 'member' });
    const keys: Organization['keys'] = [];
    for (const [user, label] of [
      [admin, 'admin 1'],
      [member, 'member 1'],
      [viewer, 'viewer 1'],
      [admin, 'admin 2'],
      [member, 'member 2'],
    ] as const) {
      const { body, value } = await t.createKey(user, label);
      keys.push({ ...body.api_key, value });
    }
    await t.get(IdentityService).setRole(viewer.organizationId, viewer.userId, 'viewer');
    return { name, admin, member, viewer: { ...viewer, role: 'viewer' }, keys };
  }

  describe('GET /v1/organization/api-keys', () => {
    it("lists every member's keys of the caller's organization, newest first, never a secret", async () => {
      const org = await organization();
      const other = await organization();
      const response = await list(org.admin).expect(200);
      expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
      expect(response.body).toStrictEqual({
        api_keys: expect.any(Array),
        page: 1,
        limit: 20,
        total_count: 5,
      });
      expect(response.body.api_keys.map((key: KeyBody) => key.id)).toEqual(newestFirst(org.keys));
      const emails = new Map([org.admin, org.member, org.viewer].map((user) => [user.userId, user.email]));
      for (const key of response.body.api_keys) {
        expect(Object.keys(key).sort()).toEqual([...KEY_RECORD_FIELDS, 'owner_email', 'revoked_by'].sort());
        expect(key.organization_id).toBe(org.admin.organizationId);
        const created = org.keys.find((made) => made.id === key.id)!;
        expect(key).toStrictEqual({
          ...Object.fromEntries(Object.entries(created).filter(([field]) => field !== 'value')),
          last_used_ip: null,
          last_used_user_agent: null,
          owner_email: emails.get(created.user_id),
          revoked_by: null,
        });
      }
      for (const key of [...org.keys, ...other.keys]) expect(response.text).not.toContain(key.value.split('.')[2]);
      expect(response.text).not.toMatch(/secret|hash/);
    });

    it('narrows to one user by e-mail address (any case); an unknown address, or one that is not user_id, matches nothing', async () => {
      const org = await organization();
      const memberKeys = org.keys.filter((key) => key.user_id === org.member.userId);
      for (const email of [org.member.email, org.member.email.toUpperCase()]) {
        const response = await list(org.admin, `?email=${encodeURIComponent(email)}`).expect(200);
        expect(response.body.total_count).toBe(2);
        expect(response.body.api_keys.map((key: KeyBody) => key.id)).toEqual(newestFirst(memberKeys));
        expect(new Set(response.body.api_keys.map((key: { owner_email: string }) => key.owner_email))).toEqual(
          new Set([org.member.email]),
        );
      }
      const both = await list(org.admin, `?email=${org.member.email}&user_id=${org.member.userId}`).expect(200);
      expect(both.body.total_count).toBe(2);
      for (const query of [`?email=nobody@example.com`, `?email=${org.member.email}&user_id=${org.admin.userId}`]) {
        expect((await list(org.admin, query).expect(200)).body).toStrictEqual({
          api_keys: [],
          page: 1,
          limit: 20,
          total_count: 0,
        });
      }
      for (const bad of ['not-an-email', 'a@b'.repeat(200), '']) {
        expectInvalidArgument(await list(org.admin, `?email=${encodeURIComponent(bad)}`));
      }
    });

    it('narrows to one user with user_id (any letter case); a user of another organization has no keys here', async () => {
      const org = await organization();
      const other = await organization();
      const memberKeys = org.keys.filter((key) => key.user_id === org.member.userId);
      for (const userId of [org.member.userId, org.member.userId.toUpperCase()]) {
        const response = await list(org.admin, `?user_id=${userId}`).expect(200);
        expect(response.body.total_count).toBe(2);
        expect(response.body.api_keys.map((key: KeyBody) => key.id)).toEqual(newestFirst(memberKeys));
      }
      // The other organization's admin: a user with keys, none of them in this organization.
      const outsider = await list(org.admin, `?user_id=${other.admin.userId}`).expect(200);
      expect(outsider.body).toStrictEqual({ api_keys: [], page: 1, limit: 20, total_count: 0 });
      const nobody = await list(org.admin, `?user_id=${randomUUID()}`).expect(200);
      expect(nobody.body.total_count).toBe(0);
    });

    it.each([
      ['a user_id that is not a UUID', '?user_id=abc'],
      ['an empty user_id', '?user_id='],
      ['a repeated user_id', `?user_id=${randomUUID()}&user_id=${randomUUID()}`],
      ['page 0', '?page=0'],
      ['limit 101', '?limit=101'],
      ['a page past the list window', '?page=501'],
      ['a page past the list window with limit 100', '?page=101&limit=100'],
      ['include_revoked=yes', '?include_revoked=yes'],
      ['an unknown parameter', '?organization_id=x'],
    ])('refuses %s with 400', async (_name, query) => {
      const org = await organization();
      expectInvalidArgument(await list(org.admin, query));
    });

    it('leaves revoked keys out unless include_revoked=true; lists expired keys either way', async () => {
      const org = await organization();
      const [revoked, expired] = [org.keys[1], org.keys[2]];
      await t.http().delete(`/v1/user-api-keys/${revoked.id}`).set(bearer(org.member.token)).expect(200);
      await dataSource.getRepository(ApiKey).update({ id: expired.id }, { expiresAt: new Date(Date.now() - 1000) });

      const active = await list(org.admin).expect(200);
      expect(active.body.total_count).toBe(4);
      expect(active.body.api_keys.map((key: KeyBody) => key.id)).not.toContain(revoked.id);
      expect(active.body.api_keys.find((key: KeyBody) => key.id === expired.id).status).toBe('EXPIRED');

      const all = await list(org.admin, '?include_revoked=true').expect(200);
      expect(all.body.total_count).toBe(5);
      expect(all.body.api_keys.map((key: KeyBody) => key.id)).toEqual(newestFirst(org.keys));
      expect(all.body.api_keys.find((key: KeyBody) => key.id === revoked.id).status).toBe('REVOKED');
      const filtered = await list(org.admin, `?user_id=${org.member.userId}&include_revoked=false`).expect(200);
      expect(filtered.body.api_keys.map((key: KeyBody) => key.id)).toEqual([org.keys[4].id]);
    });

    it('pages with page and limit; a page past the end is empty with the real total_count', async () => {
      const org = await organization();
      const order = newestFirst(org.keys);
      const pages = [];
      for (const page of [1, 2, 3]) {
        const response = await list(org.admin, `?page=${page}&limit=2`).expect(200);
        expect(response.body).toMatchObject({ page, limit: 2, total_count: 5 });
        pages.push(...response.body.api_keys.map((key: KeyBody) => key.id));
      }
      expect(pages).toEqual(order);
      const past = await list(org.admin, '?page=4&limit=2').expect(200);
      expect(past.body).toStrictEqual({ api_keys: [], page: 4, limit: 2, total_count: 5 });
    });

    it('shows keys of users no longer members (revoked by their removal) with include_revoked', async () => {
      const org = await organization();
      const removed = await runTestCli(['remove-member', '--org', org.name, '--email', org.member.email], t.env);
      expect(removed).toEqual({
        exitCode: 0,
        stdout: `${JSON.stringify({ removed: true, revoked_keys: 2 })}\n`,
        stderr: '',
      });
      const listed = await list(org.admin, `?user_id=${org.member.userId}&include_revoked=true`).expect(200);
      expect(listed.body.api_keys.map((key: KeyBody) => key.status)).toEqual(['REVOKED', 'REVOKED']);
    });
  });

  describe('DELETE /v1/organization/api-keys/{id}', () => {
    it("revokes a member's key at once, audited as api_key.revoked with reason admin and the admin as actor", async () => {
      const org = await organization();
      const key = org.keys.find((made) => made.user_id === org.member.userId)!;
      const accessToken = await t.exchange(key.value);

      const response = await revoke(org.admin, key.id).expect(200);
      expect(Object.keys(response.body)).toEqual(['api_key']);
      expect(response.body.api_key).toMatchObject({ id: key.id, user_id: org.member.userId, status: 'REVOKED' });
      expect(response.body.api_key.updated_at).toMatch(ISO_MS);
      expect(response.body.api_key.updated_at >= key.updated_at).toBe(true);
      expect(Object.keys(response.body.api_key).sort()).toEqual(
        [...KEY_RECORD_FIELDS, 'owner_email', 'revoked_by'].sort(),
      );
      expect(response.body.api_key.owner_email).toBe(org.member.email);
      expect(response.body.api_key.revoked_by).toMatchObject({ reason: 'admin', user_id: org.admin.userId });

      // The owner sees it revoked; the key and its access tokens stop working.
      expect((await ownKey(org.member, key.id).expect(200)).body.api_key.status).toBe('REVOKED');
      expectApiKeyRejected(
        await t.http().post('/v1/token').set(apiKeyAuth(key.value)),
        'api key revoked',
        'api_key_revoked',
      );
      await t.http().get('/v1/user-api-keys').set(bearer(accessToken)).expect(401);

      expect(await auditOf(key.id)).toEqual([
        expect.objectContaining({ action: 'api_key.created', reason: null }),
        {
          action: 'api_key.revoked',
          reason: 'admin',
          organization_id: org.admin.organizationId,
          actor_user_id: org.admin.userId,
          actor_api_key_id: null,
          target_type: 'api_key',
          target_id: key.id,
        },
      ]);
      // And the organization's audit log API shows it so.
      const events = await t
        .http()
        .get('/v1/audit-events')
        .query({ action: 'api_key.revoked', target_id: key.id })
        .set(bearer(org.admin.token))
        .expect(200);
      expect(events.body.audit_events).toEqual([
        expect.objectContaining({ reason: 'admin', actor_user_id: org.admin.userId, target_id: key.id }),
      ]);
    });

    it('is idempotent: a revoked key answers 200 unchanged and is audited once', async () => {
      const org = await organization();
      const key = org.keys.find((made) => made.user_id === org.viewer.userId)!;
      const first = await revoke(org.admin, key.id).expect(200);
      const again = await revoke(org.admin, key.id).expect(200);
      expect(again.body).toStrictEqual(first.body);
      // Revoked by its owner first, then by an admin: still one revocation on record.
      const own = org.keys.find((made) => made.user_id === org.member.userId)!;
      await t.http().delete(`/v1/user-api-keys/${own.id}`).set(bearer(org.member.token)).expect(200);
      await revoke(org.admin, own.id).expect(200);
      for (const [id, reason] of [
        [key.id, 'admin'],
        [own.id, 'user'],
      ]) {
        const revocations = (await auditOf(id)).filter((event) => event.action === 'api_key.revoked');
        expect(revocations.map((event) => event.reason)).toEqual([reason]);
      }
    });

    it("revokes the admin's own key and an expired key too", async () => {
      const org = await organization();
      const [own, expired] = [org.keys[0], org.keys[2]];
      await dataSource.getRepository(ApiKey).update({ id: expired.id }, { expiresAt: new Date(Date.now() - 1000) });
      expect((await revoke(org.admin, own.id).expect(200)).body.api_key.status).toBe('REVOKED');
      expect((await revoke(org.admin, expired.id).expect(200)).body.api_key.status).toBe('REVOKED');
    });

    it('answers 404 "api key not found" for an unknown id, 400 for one that is not a UUID', async () => {
      const org = await organization();
      expectError(await revoke(org.admin, randomUUID()), 404, 'NOT_FOUND', 'api key not found', 'api_key_not_found');
      expectInvalidArgument(await revoke(org.admin, 'not-a-uuid'));
    });

    it('takes an access token only when its key has api_keys:manage', async () => {
      const org = await organization();
      const target = org.keys.find((made) => made.user_id === org.member.userId)!;
      const plain = await t.createKey(org.admin, 'defaults');
      const plainToken = await t.exchange(plain.value);
      expectError(
        await list({ token: plainToken }),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      expectError(
        await revoke({ token: plainToken }, target.id),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );

      const manager = await t.createKey(org.admin, 'manager', { scopes: ['api_keys:manage'] });
      const managerToken = await t.exchange(manager.value);
      expect((await list({ token: managerToken }).expect(200)).body.total_count).toBe(7);
      await revoke({ token: managerToken }, target.id).expect(200);
      expect(await auditOf(target.id)).toContainEqual(
        expect.objectContaining({ reason: 'admin', actor_user_id: org.admin.userId, actor_api_key_id: manager.id }),
      );
    });
  });

  describe('who may', () => {
    it.each([['member'], ['viewer']] as const)('a %s gets 403 on both routes, and nothing changes', async (role) => {
      const org = await organization();
      const caller = org[role];
      const target = org.keys.find((made) => made.user_id === org.admin.userId)!;
      expectError(await list(caller), 403, 'PERMISSION_DENIED', 'insufficient permissions', 'insufficient_permissions');
      expectError(
        await list(caller, `?user_id=${caller.userId}`),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      expectError(
        await revoke(caller, target.id),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      // Even its own key, through this route.
      const own = org.keys.find((made) => made.user_id === caller.userId)!;
      expectError(
        await revoke(caller, own.id),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      expect((await ownKey(org.admin, target.id).expect(200)).body.api_key.status).toBe('ACTIVE');
      expect((await ownKey(caller, own.id).expect(200)).body.api_key.status).toBe('ACTIVE');
    });

    it('a viewer lists, reads and revokes its own keys (audited with reason user)', async () => {
      const org = await organization();
      const own = org.keys.find((made) => made.user_id === org.viewer.userId)!;
      const listed = await t.http().get('/v1/user-api-keys').set(bearer(org.viewer.token)).expect(200);
      expect(listed.body.api_keys.map((key: KeyBody) => key.id)).toEqual([own.id]);
      await ownKey(org.viewer, own.id).expect(200);
      const revoked = await t.http().delete(`/v1/user-api-keys/${own.id}`).set(bearer(org.viewer.token)).expect(200);
      expect(revoked.body.api_key.status).toBe('REVOKED');
      expect((await auditOf(own.id)).at(-1)).toMatchObject({
        action: 'api_key.revoked',
        reason: 'user',
        actor_user_id: org.viewer.userId,
      });
    });

    it('without a token: 401 on both routes', async () => {
      const org = await organization();
      await t.http().get('/v1/organization/api-keys').expect(401);
      await t.http().delete(`/v1/organization/api-keys/${org.keys[0].id}`).expect(401);
    });
  });

  describe('across organizations', () => {
    it("an admin of another organization neither sees nor revokes this organization's keys (404)", async () => {
      const a = await organization();
      const b = await organization();
      const listed = await list(b.admin, '?include_revoked=true&limit=100').expect(200);
      expect(listed.body.total_count).toBe(5);
      expect(listed.body.api_keys.every((key: KeyBody) => key.organization_id === b.admin.organizationId)).toBe(true);
      for (const key of a.keys) {
        expectError(await revoke(b.admin, key.id), 404, 'NOT_FOUND', 'api key not found', 'api_key_not_found');
      }
      const untouched = await list(a.admin).expect(200);
      expect(untouched.body.api_keys.map((key: KeyBody) => key.status)).toEqual(Array(5).fill('ACTIVE'));
      expect(await auditOf(a.keys[0].id)).toHaveLength(1);
    });

    it('a user who is admin in A and member in B manages A only, and not even its own keys of B', async () => {
      const a = await organization();
      const b = await organization();
      const email = `both-${randomUUID()}@example.com`;
      const inA = await t.user({ org: a.name, email, role: 'admin' });
      const inB = await t.user({ org: b.name, email, role: 'member' });
      expect(inA.userId).toBe(inB.userId);
      const keyInA = await t.createKey(inA, 'mine in A');
      const keyInB = await t.createKey(inB, 'mine in B');

      // With the token of A: A's keys, its own key of A among them; nothing of B.
      const listedA = await list(inA, '?limit=100').expect(200);
      const idsA = listedA.body.api_keys.map((key: KeyBody) => key.id);
      expect(idsA).toContain(keyInA.id);
      expect(idsA).not.toContain(keyInB.id);
      expect(idsA.some((id: string) => b.keys.some((key) => key.id === id))).toBe(false);
      const ownInA = await list(inA, `?user_id=${inA.userId}`).expect(200);
      expect(ownInA.body.api_keys.map((key: KeyBody) => key.id)).toEqual([keyInA.id]);
      expectError(await revoke(inA, keyInB.id), 404, 'NOT_FOUND', 'api key not found', 'api_key_not_found');
      expectError(await revoke(inA, b.keys[0].id), 404, 'NOT_FOUND', 'api key not found', 'api_key_not_found');
      await revoke(inA, a.keys[1].id).expect(200);

      // With the token of B (a member there): 403 on both routes.
      expectError(await list(inB), 403, 'PERMISSION_DENIED', 'insufficient permissions', 'insufficient_permissions');
      expectError(
        await revoke(inB, a.keys[0].id),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      expect((await ownKey(inB, keyInB.id).expect(200)).body.api_key.status).toBe('ACTIVE');
      await t.exchange(keyInB.value);
    });
  });
});
