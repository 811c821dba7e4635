import { randomBytes } from 'node:crypto';
import { DataSource } from 'typeorm';
import { IdentityService } from '../../src/identity/identity.service';
import {
  apiKeyAuth,
  bearer,
  expectBearerRejected,
  expectError,
  expectInvalidArgument,
  UUID,
} from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

/**
 * GET and PATCH /v1/organization (docs/api.md#organization-settings): every member reads the
 * organization of their token, admins (organization:write) change it, each change is audited, and
 * nobody reaches another organization's settings.
 */
describe(`organization settings on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let dataSource: DataSource;

  beforeAll(async () => {
    t = await createTestApp();
    dataSource = t.get(DataSource);
  });
  afterAll(() => t.close());

  const path = '/v1/organization';
  const uniqueOrg = () => `settings-${randomBytes(4).toString('hex')}`;
  const read = (user: TestUser) => t.http().get(path).set(bearer(user.token));
  const patch = (user: TestUser, body: unknown) =>
    t
      .http()
      .patch(path)
      .set(bearer(user.token))
      .send(body as object);

  /** The organization row as stored. */
  const stored = async (organizationId: string) => {
    const rows: Array<Record<string, unknown>> = await dataSource.query(
      `SELECT access_token_lifetime, max_key_lifetime_days, updated_at FROM organizations WHERE id = '${organizationId}'`,
    );
    return {
      access_token_lifetime: Number(rows[0].access_token_lifetime),
      max_key_lifetime_days: rows[0].max_key_lifetime_days === null ? null : Number(rows[0].max_key_lifetime_days),
      updated_at: new Date(rows[0].updated_at as string).toISOString(),
    };
  };
  const auditRows = (organizationId: string): Promise<Array<Record<string, unknown>>> =>
    dataSource.query(
      `SELECT * FROM audit_events WHERE action = 'organization.updated' AND organization_id = '${organizationId}'
       ORDER BY occurred_at, id`,
    );

  /** An organization with one user of each role. */
  async function organization() {
    const org = uniqueOrg();
    return {
      name: org,
      admin: await t.user({ org, role: 'admin' }),
      member: await t.user({ org, role: 'member' }),
      viewer: await t.user({ org, role: 'viewer' }),
    };
  }

  describe('GET /v1/organization', () => {
    it.each(['admin', 'member', 'viewer'] as const)(
      'answers a %s exactly the organization and its settings',
      async (role) => {
        const org = await organization();
        const response = await read(org[role]).expect(200);
        expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
        expect(response.body).toStrictEqual({
          organization: {
            id: org.admin.organizationId,
            name: org.name,
            access_token_lifetime: 1800,
            max_key_lifetime_days: null,
            require_key_allowlist: false,
          },
        });
      },
    );

    it('answers an access token minted from a key', async () => {
      const org = await organization();
      const key = await t.createKey(org.member);
      const token = await t.exchange(key.value);
      const response = await t.http().get(path).set(bearer(token)).expect(200);
      expect(response.body.organization.id).toBe(org.member.organizationId);
    });

    it('refuses a request without a valid Bearer token (401)', async () => {
      expectBearerRejected(await t.http().get(path));
      expectBearerRejected(await t.http().get(path).set(bearer('not-a-token')), 'token_invalid');
    });
  });

  describe('PATCH /v1/organization', () => {
    it('sets both settings, answers the organization as changed and stores it', async () => {
      const org = await organization();
      const response = await patch(org.admin, { access_token_lifetime: 900, max_key_lifetime_days: 90 }).expect(200);
      const expected = {
        organization: {
          id: org.admin.organizationId,
          name: org.name,
          access_token_lifetime: 900,
          max_key_lifetime_days: 90,
          require_key_allowlist: false,
        },
      };
      expect(response.body).toStrictEqual(expected);
      expect((await read(org.viewer).expect(200)).body).toStrictEqual(expected);
      expect(await stored(org.admin.organizationId)).toMatchObject({
        access_token_lifetime: 900,
        max_key_lifetime_days: 90,
      });
    });

    it('changes only the settings the body names; null removes the key policy', async () => {
      const org = await organization();
      await patch(org.admin, { max_key_lifetime_days: 30 }).expect(200);
      const lifetime = await patch(org.admin, { access_token_lifetime: 120 }).expect(200);
      expect(lifetime.body.organization).toMatchObject({ access_token_lifetime: 120, max_key_lifetime_days: 30 });
      const cleared = await patch(org.admin, { max_key_lifetime_days: null }).expect(200);
      expect(cleared.body.organization).toMatchObject({ access_token_lifetime: 120, max_key_lifetime_days: null });
      expect(await stored(org.admin.organizationId)).toMatchObject({
        access_token_lifetime: 120,
        max_key_lifetime_days: null,
      });
    });

    it.each([
      [{ access_token_lifetime: 60 }],
      [{ access_token_lifetime: 86400 }],
      [{ max_key_lifetime_days: 1 }],
      [{ max_key_lifetime_days: 3650 }],
      [{ max_key_lifetime_days: null }],
    ])('accepts the boundary %j', async (body) => {
      const org = await organization();
      const response = await patch(org.admin, body).expect(200);
      expect(response.body.organization).toMatchObject(body);
      expect(await stored(org.admin.organizationId)).toMatchObject(body);
    });

    it.each([
      [{ access_token_lifetime: 59 }],
      [{ access_token_lifetime: 86401 }],
      [{ access_token_lifetime: 0 }],
      [{ access_token_lifetime: -60 }],
      [{ access_token_lifetime: 600.5 }],
      [{ access_token_lifetime: '600' }],
      [{ access_token_lifetime: null }],
      [{ access_token_lifetime: true }],
      [{ access_token_lifetime: [600] }],
      [{ max_key_lifetime_days: 0 }],
      [{ max_key_lifetime_days: 3651 }],
      [{ max_key_lifetime_days: 1.5 }],
      [{ max_key_lifetime_days: '30' }],
      [{ max_key_lifetime_days: 'none' }],
      [{ max_key_lifetime_days: false }],
      [{ max_key_lifetime_days: {} }],
      [{ name: 'renamed' }],
      [{ id: '00000000-0000-4000-8000-000000000000' }],
      [{ access_token_lifetime: 600, colour: 'red' }],
      [[]],
      [[{ access_token_lifetime: 600 }]],
    ])('refuses %j with 400 and changes nothing', async (body) => {
      const org = await organization();
      const before = await stored(org.admin.organizationId);
      expectInvalidArgument(await patch(org.admin, body));
      expect(await stored(org.admin.organizationId)).toEqual(before);
      expect(await auditRows(org.admin.organizationId)).toEqual([]);
    });

    it('refuses malformed JSON and a JSON null body with 400', async () => {
      const org = await organization();
      const raw = (text: string) =>
        t.http().patch(path).set(bearer(org.admin.token)).set('Content-Type', 'application/json').send(text);
      expectInvalidArgument(await raw('{"access_token_lifetime": 600'));
      expectInvalidArgument(await raw('null'));
      expectInvalidArgument(await raw('600'));
    });

    it('an empty body (or none) changes and records nothing, and answers the organization', async () => {
      const org = await organization();
      await patch(org.admin, { max_key_lifetime_days: 7 }).expect(200);
      const before = await stored(org.admin.organizationId);
      const events = await auditRows(org.admin.organizationId);
      expect(events).toHaveLength(1);

      const empty = await patch(org.admin, {}).expect(200);
      const none = await t.http().patch(path).set(bearer(org.admin.token)).expect(200);
      for (const response of [empty, none]) {
        expect(response.body).toStrictEqual({
          organization: {
            id: org.admin.organizationId,
            name: org.name,
            access_token_lifetime: 1800,
            max_key_lifetime_days: 7,
            require_key_allowlist: false,
          },
        });
      }
      expect(await stored(org.admin.organizationId)).toEqual(before);
      expect(await auditRows(org.admin.organizationId)).toEqual(events);
    });

    it.each(['member', 'viewer'] as const)('refuses a %s with 403 and changes nothing', async (role) => {
      const org = await organization();
      const before = await stored(org.admin.organizationId);
      expectError(
        await patch(org[role], { access_token_lifetime: 60, max_key_lifetime_days: 1 }),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      // The permission comes before the body: a member's bad body is 403 too.
      expectError(
        await patch(org[role], { colour: 'red' }),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      expect(await stored(org.admin.organizationId)).toEqual(before);
      expect(await auditRows(org.admin.organizationId)).toEqual([]);
    });

    it('refuses a request without a valid Bearer token (401) and changes nothing', async () => {
      const org = await organization();
      const before = await stored(org.admin.organizationId);
      expectBearerRejected(await t.http().patch(path).send({ access_token_lifetime: 60 }));
      expect(await stored(org.admin.organizationId)).toEqual(before);
    });

    it('records organization.updated with the actor, the organization, the request id and address', async () => {
      const org = await organization();
      const response = await t
        .http()
        .patch(path)
        .set(bearer(org.admin.token))
        .set('X-Request-Id', 'settings-audit-1')
        .send({ access_token_lifetime: 300 })
        .expect(200);
      expect(response.headers['x-request-id']).toBe('settings-audit-1');
      // The same value again is still a change request, and recorded.
      await patch(org.admin, { access_token_lifetime: 300 }).expect(200);

      const events = await auditRows(org.admin.organizationId);
      expect(events).toHaveLength(2);
      expect(events[0]).toMatchObject({
        action: 'organization.updated',
        organization_id: org.admin.organizationId,
        actor_user_id: org.admin.userId,
        actor_api_key_id: null,
        target_type: 'organization',
        target_id: org.admin.organizationId,
        reason: null,
        request_id: 'settings-audit-1',
      });
      expect(events[0].id).toMatch(UUID);
      expect(events[0].client_ip).toMatch(/^(::ffff:)?127\.0\.0\.1$|^::1$/);
    });

    it('a new access-token lifetime applies to the next exchange at once', async () => {
      const org = await organization();
      const key = await t.createKey(org.member);
      const exchange = async () =>
        (await t.http().post('/v1/token').set(apiKeyAuth(key.value)).expect(200)).body.expires_in as number;
      expect(await exchange()).toBe(1800);
      await patch(org.admin, { access_token_lifetime: 120 }).expect(200);
      expect(await exchange()).toBe(120);
      await patch(org.admin, { access_token_lifetime: 86400 }).expect(200);
      expect(await exchange()).toBe(86400);
    });

    it('a key policy set here applies to the next key created, not to the keys made before it', async () => {
      const org = await organization();
      const before = await t.createKey(org.member);
      expect(before.body.api_key.expires_at).toBeNull();
      await patch(org.admin, { max_key_lifetime_days: 7 }).expect(200);

      const { created_at: createdAt, expires_at: expiresAt } = (await t.createKey(org.member)).body.api_key;
      expect(Date.parse(String(expiresAt)) - Date.parse(createdAt)).toBe(7 * 86_400_000);
      const later = new Date(Date.parse(createdAt) + 8 * 86_400_000).toISOString();
      expectInvalidArgument(
        await t.http().post('/v1/user-api-keys').set(bearer(org.member.token)).send({ expires_at: later }),
        'expires_at_invalid',
      );
      const kept = await t.http().get(`/v1/user-api-keys/${before.id}`).set(bearer(org.member.token)).expect(200);
      expect(kept.body.api_key.expires_at).toBeNull();

      await patch(org.admin, { max_key_lifetime_days: null }).expect(200);
      expect((await t.createKey(org.member)).body.api_key.expires_at).toBeNull();
    });

    it('concurrent changes of different settings both stay, and each answer shows its own change', async () => {
      const org = await organization();
      // Rounds of two PATCHes at once, one per setting: after each round both values are there (a
      // change that wrote back a stale copy of the other setting would lose one of them).
      for (let round = 1; round <= 10; round += 1) {
        const [lifetime, policy] = await Promise.all([
          patch(org.admin, { access_token_lifetime: 600 + round }),
          patch(org.admin, { max_key_lifetime_days: 10 + round }),
        ]);
        expect([lifetime.status, policy.status]).toEqual([200, 200]);
        expect(lifetime.body.organization.access_token_lifetime).toBe(600 + round);
        expect(policy.body.organization.max_key_lifetime_days).toBe(10 + round);
        expect(await stored(org.admin.organizationId)).toMatchObject({
          access_token_lifetime: 600 + round,
          max_key_lifetime_days: 10 + round,
        });
      }
      expect(await auditRows(org.admin.organizationId)).toHaveLength(20);
    });
  });

  describe('between organizations', () => {
    it("an admin of A reads and changes A's settings only; B's stay as they were", async () => {
      const a = await organization();
      const b = await organization();
      await patch(b.admin, { access_token_lifetime: 700, max_key_lifetime_days: 70 }).expect(200);
      const bBefore = await stored(b.admin.organizationId);

      const changed = await patch(a.admin, { access_token_lifetime: 61, max_key_lifetime_days: 2 }).expect(200);
      expect(changed.body.organization.id).toBe(a.admin.organizationId);
      expect(await stored(b.admin.organizationId)).toEqual(bBefore);
      expect((await read(a.admin).expect(200)).body.organization).toMatchObject({
        id: a.admin.organizationId,
        name: a.name,
      });
      expect((await read(b.viewer).expect(200)).body.organization).toStrictEqual({
        id: b.admin.organizationId,
        name: b.name,
        access_token_lifetime: 700,
        max_key_lifetime_days: 70,
        require_key_allowlist: false,
      });
      expect(await auditRows(b.admin.organizationId)).toHaveLength(1);
      expect(await auditRows(a.admin.organizationId)).toHaveLength(1);
    });

    it('a user who is admin of A and viewer of B changes A with a token for A, and nothing with a token for B', async () => {
      const a = await organization();
      const b = await organization();
      const inA = await t.user({ org: a.name, role: 'admin' });
      const inB = await t.user({ org: b.name, role: 'viewer', email: inA.email });
      expect(inB.userId).toBe(inA.userId);

      expectError(
        await patch(inB, { access_token_lifetime: 60 }),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      expect((await read(inB).expect(200)).body.organization).toMatchObject({
        id: b.admin.organizationId,
        access_token_lifetime: 1800,
      });
      await patch(inA, { access_token_lifetime: 60 }).expect(200);
      expect((await stored(a.admin.organizationId)).access_token_lifetime).toBe(60);
      expect((await stored(b.admin.organizationId)).access_token_lifetime).toBe(1800);
    });

    it("a removed member's token reads nothing any more (401)", async () => {
      const org = await organization();
      await t.get(IdentityService).removeMember(org.viewer.organizationId, org.viewer.userId);
      expectBearerRejected(await read(org.viewer), 'member_removed');
    });
  });
});
