import { DataSource } from 'typeorm';
import { bearer, expectError, expectInvalidArgument } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

/**
 * A key's allowlist and rate limit as its owner manages them (docs/api.md#allowlists-and-rate-limits): set at creation,
 * changed with PATCH /v1/user-api-keys/{id} (audited api_key.updated), kept by a rotation, normalized, every bad input
 * refused with nothing stored; the organization's policy that requires an allowlist. How they are enforced:
 * test/auth/key-policies-enforcement.e2e-spec.ts.
 */
describe(`API key allowlists and rate limits: the records, on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let dataSource: DataSource;
  let orgs = 0;
  beforeAll(async () => {
    t = await createTestApp();
    dataSource = t.get(DataSource);
  });
  afterAll(() => t.close());

  const user = (role: TestUser['role'] = 'admin'): Promise<TestUser> => t.user({ org: `policies-${++orgs}`, role });
  const create = (owner: TestUser, body: object) =>
    t.http().post('/v1/user-api-keys').set(bearer(owner.token)).send(body);
  const patch = (owner: Pick<TestUser, 'token'>, id: string, body: unknown) =>
    t
      .http()
      .patch(`/v1/user-api-keys/${id}`)
      .set(bearer(owner.token))
      .send(body as object);
  const get = (owner: TestUser, id: string) => t.http().get(`/v1/user-api-keys/${id}`).set(bearer(owner.token));
  const requireAllowlist = (admin: TestUser, on: boolean) =>
    t.http().patch('/v1/organization').set(bearer(admin.token)).send({ require_key_allowlist: on }).expect(200);
  const keyCount = async (owner: TestUser): Promise<number> =>
    Number(
      (
        await dataSource.query(
          `SELECT COUNT(*) AS n FROM api_keys WHERE user_id = '${owner.userId}' AND organization_id = '${owner.organizationId}'`,
        )
      )[0].n,
    );
  const updates = async (id: string): Promise<number> =>
    Number(
      (
        await dataSource.query(
          `SELECT COUNT(*) AS n FROM audit_events WHERE action = 'api_key.updated' AND target_id = '${id}'`,
        )
      )[0].n,
    );

  describe('at creation', () => {
    it('stores the allowlist normalized and the rate limit, and shows them on every read', async () => {
      const owner = await user();
      const created = await create(owner, {
        allowed_cidrs: ['203.0.113.7', '10.1.2.3/8', '2001:DB8:0:0::1/32', '10.0.0.0/8', '::ffff:192.0.2.0/120'],
        rate_limit: { requests: 100, window_seconds: 60 },
      }).expect(201);
      const expected = {
        allowed_cidrs: ['203.0.113.7/32', '10.0.0.0/8', '2001:db8::/32', '192.0.2.0/24'],
        rate_limit: { requests: 100, window_seconds: 60 },
      };
      expect(created.body.api_key).toMatchObject(expected);
      expect((await get(owner, created.body.api_key.id).expect(200)).body.api_key).toMatchObject(expected);
      const listed = await t.http().get('/v1/user-api-keys').set(bearer(owner.token)).expect(200);
      expect(listed.body.api_keys[0]).toMatchObject(expected);
      const organization = await t.http().get('/v1/organization/api-keys').set(bearer(owner.token)).expect(200);
      expect(organization.body.api_keys[0]).toMatchObject(expected);
    });

    it('shows null for a key without them, and takes null as none', async () => {
      const owner = await user();
      for (const body of [{}, { allowed_cidrs: null, rate_limit: null }]) {
        const created = await create(owner, body).expect(201);
        expect(created.body.api_key).toMatchObject({ allowed_cidrs: null, rate_limit: null });
      }
    });

    it.each([
      [
        'a malformed CIDR',
        ['10.0.0.0/8', '10.0.0.300/8'],
        'allowed_cidrs: "10.0.0.300/8" is not an IPv4 or IPv6 CIDR or address',
      ],
      [
        'a prefix too long',
        ['2001:db8::/129'],
        'allowed_cidrs: "2001:db8::/129" is not an IPv4 or IPv6 CIDR or address',
      ],
      ['a host name', ['example.com'], 'allowed_cidrs: "example.com" is not an IPv4 or IPv6 CIDR or address'],
      ['an empty list', [], 'allowed_cidrs must hold at least one CIDR (null: any address)'],
      [
        '101 entries',
        Array.from({ length: 101 }, (_, i) => `10.0.${i}.0/24`),
        'allowed_cidrs holds at most 100 entries',
      ],
    ])('refuses %s with 400 and a message that says why, storing nothing', async (_name, allowed_cidrs, message) => {
      const owner = await user();
      expectError(await create(owner, { allowed_cidrs }), 400, 'INVALID_ARGUMENT', message, 'allowed_cidrs_invalid');
      expect(await keyCount(owner)).toBe(0);
    });

    it('takes 100 entries', async () => {
      const owner = await user();
      const allowed_cidrs = Array.from({ length: 100 }, (_, i) => `10.0.${i}.0/24`);
      expect((await create(owner, { allowed_cidrs }).expect(201)).body.api_key.allowed_cidrs).toEqual(allowed_cidrs);
    });

    it.each([
      [{ allowed_cidrs: '10.0.0.0/8' }],
      [{ allowed_cidrs: [10] }],
      [{ allowed_cidrs: [null] }],
      [{ allowed_cidrs: {} }],
      [{ rate_limit: { requests: 0, window_seconds: 60 } }],
      [{ rate_limit: { requests: 1_000_001, window_seconds: 60 } }],
      [{ rate_limit: { requests: 10, window_seconds: 0 } }],
      [{ rate_limit: { requests: 10, window_seconds: 86_401 } }],
      [{ rate_limit: { requests: 1.5, window_seconds: 60 } }],
      [{ rate_limit: { requests: '10', window_seconds: 60 } }],
      [{ rate_limit: { requests: 10 } }],
      [{ rate_limit: { window_seconds: 60 } }],
      [{ rate_limit: { requests: 10, window_seconds: 60, burst: 5 } }],
      [{ rate_limit: [10, 60] }],
      [{ rate_limit: 10 }],
    ])('refuses %j with 400, storing nothing', async (body) => {
      const owner = await user();
      expectInvalidArgument(await create(owner, body));
      expect(await keyCount(owner)).toBe(0);
    });

    it('takes the rate limit bounds', async () => {
      const owner = await user();
      for (const rate_limit of [
        { requests: 1, window_seconds: 1 },
        { requests: 1_000_000, window_seconds: 86_400 },
      ]) {
        expect((await create(owner, { rate_limit }).expect(201)).body.api_key.rate_limit).toEqual(rate_limit);
      }
    });
  });

  describe('PATCH /v1/user-api-keys/{id}', () => {
    it('changes the fields the body names, keeps the others, and records api_key.updated', async () => {
      const owner = await user();
      const { id } = await t.createKey(owner, 'first', {
        allowed_cidrs: ['10.0.0.0/8'],
        rate_limit: { requests: 5, window_seconds: 10 },
      });
      const before = (await get(owner, id).expect(200)).body.api_key;
      const relabelled = await patch(owner, id, { label: 'second' }).expect(200);
      expect(relabelled.body.api_key).toMatchObject({
        label: 'second',
        allowed_cidrs: ['10.0.0.0/8'],
        rate_limit: { requests: 5, window_seconds: 10 },
        scopes: before.scopes,
        expires_at: before.expires_at,
      });
      const changed = await patch(owner, id, { allowed_cidrs: ['192.0.2.1', '192.0.2.1/32'] }).expect(200);
      expect(changed.body.api_key).toMatchObject({
        label: 'second',
        allowed_cidrs: ['192.0.2.1/32'],
        rate_limit: { requests: 5, window_seconds: 10 },
      });
      expect(changed.body.api_key.updated_at >= before.updated_at).toBe(true);
      const removed = await patch(owner, id, { allowed_cidrs: null, rate_limit: null }).expect(200);
      expect(removed.body.api_key).toMatchObject({ label: 'second', allowed_cidrs: null, rate_limit: null });
      expect((await get(owner, id).expect(200)).body.api_key).toEqual(removed.body.api_key);
      expect(await updates(id)).toBe(3);
      const [event] = await dataSource.query(
        `SELECT actor_user_id, target_type, organization_id FROM audit_events WHERE action = 'api_key.updated' AND target_id = '${id}' LIMIT 1`,
      );
      expect(event).toEqual({
        actor_user_id: owner.userId,
        target_type: 'api_key',
        organization_id: owner.organizationId,
      });
    });

    it("says what changed in api_key.updated's changes: each field's before and after, never a secret", async () => {
      const owner = await user();
      const key = await t.createKey(owner, 'before', { allowed_cidrs: ['10.0.0.0/8'] });
      const changes = async () =>
        (
          await t
            .http()
            .get('/v1/audit-events')
            .query({ action: 'api_key.updated', target_id: key.id })
            .set(bearer(owner.token))
            .expect(200)
        ).body.audit_events.map((event: { changes: unknown }) => event.changes);
      await patch(owner, key.id, { label: 'after', allowed_cidrs: ['10.0.0.0/8'] }).expect(200);
      await patch(owner, key.id, {
        allowed_cidrs: ['192.0.2.1'],
        rate_limit: { requests: 5, window_seconds: 60 },
      }).expect(200);
      await patch(owner, key.id, { allowed_cidrs: null, rate_limit: null, label: 'after' }).expect(200);
      expect(await changes()).toEqual([
        {
          allowed_cidrs: { before: ['192.0.2.1/32'], after: null },
          rate_limit: { before: { requests: 5, window_seconds: 60 }, after: null },
        },
        {
          allowed_cidrs: { before: ['10.0.0.0/8'], after: ['192.0.2.1/32'] },
          rate_limit: { before: null, after: { requests: 5, window_seconds: 60 } },
        },
        // The allowlist given as it was is not a change.
        { label: { before: 'before', after: 'after' } },
      ]);
      const [row] = await dataSource.query(
        `SELECT changes FROM audit_events WHERE action = 'api_key.updated' AND target_id = '${key.id}'`,
      );
      expect(row.changes).not.toContain(key.value.split('.')[2]);
    });

    it('records nothing for a body that names every field as it already is', async () => {
      const owner = await user();
      const { id } = await t.createKey(owner, 'same', { rate_limit: { requests: 5, window_seconds: 10 } });
      const before = (await get(owner, id).expect(200)).body.api_key;
      await patch(owner, id, {
        label: 'same',
        rate_limit: { requests: 5, window_seconds: 10 },
        allowed_cidrs: null,
      }).expect(200);
      expect((await get(owner, id).expect(200)).body.api_key).toEqual(before);
      expect(await updates(id)).toBe(0);
    });

    it('changes nothing and records nothing for an empty body', async () => {
      const owner = await user();
      const { id } = await t.createKey(owner, 'same');
      const before = (await get(owner, id).expect(200)).body.api_key;
      expect((await patch(owner, id, {}).expect(200)).body.api_key).toEqual(before);
      expect(await updates(id)).toBe(0);
    });

    it.each([
      [{ label: null }],
      [{ label: 7 }],
      [{ scopes: ['api_keys:read'] }],
      [{ expires_at: null }],
      [{ status: 'REVOKED' }],
      [{ allowed_cidrs: ['10.0.0.0/8', 'nope'] }],
      [{ allowed_cidrs: [] }],
      [{ rate_limit: { requests: 0, window_seconds: 1 } }],
      [{ rate_limit: { requests: 1, window_seconds: 86_401 } }],
    ])('refuses %j with 400 and leaves the key as it was', async (body) => {
      const owner = await user();
      const { id } = await t.createKey(owner, 'kept', { allowed_cidrs: ['10.0.0.0/8'] });
      const before = (await get(owner, id).expect(200)).body.api_key;
      const response = await patch(owner, id, body);
      expect([response.status, response.body.code]).toEqual([400, 'INVALID_ARGUMENT']);
      expect((await get(owner, id).expect(200)).body.api_key).toEqual(before);
      expect(await updates(id)).toBe(0);
    });

    it("answers 404 for another user's key, another organization's, or none; 400 for a key that is not active", async () => {
      const owner = await user();
      const colleague = await t.user({ org: `policies-${orgs}`, role: 'admin' });
      const stranger = await user();
      const { id } = await t.createKey(owner, 'mine');
      for (const caller of [colleague, stranger]) {
        expectError(
          await patch(caller, id, { label: 'theirs' }),
          404,
          'NOT_FOUND',
          'api key not found',
          'api_key_not_found',
        );
      }
      expectError(
        await patch(owner, '00000000-0000-4000-8000-000000000000', { label: 'x' }),
        404,
        'NOT_FOUND',
        'api key not found',
        'api_key_not_found',
      );
      expectInvalidArgument(await patch(owner, 'not-a-uuid', { label: 'x' }));
      await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(owner.token)).expect(200);
      expectError(
        await patch(owner, id, { label: 'late' }),
        400,
        'FAILED_PRECONDITION',
        'api key is not active',
        'api_key_not_active',
      );
      expect((await get(owner, id).expect(200)).body.api_key.label).toBe('mine');
    });

    it('needs api_keys:create: a viewer may not change keys', async () => {
      const viewer = await user('viewer');
      const admin = await t.user({ org: `policies-${orgs}`, role: 'admin' });
      const { id } = await t.createKey(admin, 'admin key');
      expectError(
        await patch(viewer, id, { label: 'x' }),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
    });
  });

  describe('rotation', () => {
    it("gives the new key the old one's allowlist and rate limit, with or without a grace period", async () => {
      const owner = await user();
      const policies = { allowed_cidrs: ['198.51.100.0/24'], rate_limit: { requests: 7, window_seconds: 30 } };
      let { id } = await t.createKey(owner, 'rotated', policies);
      for (const grace_period_seconds of [60, 0]) {
        const rotated = await t
          .http()
          .post(`/v1/user-api-keys/${id}/rotate`)
          .set(bearer(owner.token))
          .send({ grace_period_seconds })
          .expect(201);
        expect(rotated.body.api_key).toMatchObject(policies);
        id = rotated.body.api_key.id as string;
        expect(rotated.body.previous_api_key).toMatchObject(policies);
      }
    });
  });

  describe("the organization's policy: require_key_allowlist", () => {
    it('is false by default, set by admins, refused when not a boolean', async () => {
      const admin = await user();
      expect(
        (await t.http().get('/v1/organization').set(bearer(admin.token)).expect(200)).body.organization,
      ).toMatchObject({
        require_key_allowlist: false,
      });
      expect((await requireAllowlist(admin, true)).body.organization.require_key_allowlist).toBe(true);
      expect(
        (await t.http().get('/v1/organization').set(bearer(admin.token)).expect(200)).body.organization,
      ).toMatchObject({
        require_key_allowlist: true,
      });
      for (const value of [null, 'true', 1, []]) {
        expectInvalidArgument(
          await t.http().patch('/v1/organization').set(bearer(admin.token)).send({ require_key_allowlist: value }),
        );
      }
      const member = await t.user({ org: `policies-${orgs}`, role: 'member' });
      expectError(
        await t.http().patch('/v1/organization').set(bearer(member.token)).send({ require_key_allowlist: false }),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
      const [event] = await dataSource.query(
        `SELECT COUNT(*) AS n FROM audit_events WHERE action = 'organization.updated' AND target_id = '${admin.organizationId}'`,
      );
      expect(Number(event.n)).toBe(1);
    });

    it('refuses new keys without an allowlist, or with a /0, storing nothing; a list of networks is fine', async () => {
      const admin = await user();
      await requireAllowlist(admin, true);
      const required = "allowed_cidrs is required: the organization's key policy requires an allowlist";
      expectError(await create(admin, {}), 400, 'INVALID_ARGUMENT', required, 'allowlist_required');
      expectError(
        await create(admin, { allowed_cidrs: null }),
        400,
        'INVALID_ARGUMENT',
        required,
        'allowlist_required',
      );
      for (const everything of ['0.0.0.0/0', '::/0', '10.0.0.0/0', '::ffff:0:0/96']) {
        expectError(
          await create(admin, { allowed_cidrs: ['10.0.0.0/8', everything] }),
          400,
          'INVALID_ARGUMENT',
          `allowed_cidrs: "${everything}" allows every address, which the organization's key policy forbids`,
          'allowlist_too_broad',
        );
      }
      expect(await keyCount(admin)).toBe(0);
      await create(admin, { allowed_cidrs: ['10.0.0.0/8', '2001:db8::/32'] }).expect(201);
      // Without the policy a /0 is a list like any other (every address of its family).
      await requireAllowlist(admin, false);
      await create(admin, { allowed_cidrs: ['0.0.0.0/0'] }).expect(201);
    });

    it('keeps a key from losing its allowlist or gaining a /0 by PATCH, and a key without one from rotating', async () => {
      const admin = await user();
      const before = await t.createKey(admin, 'before the policy');
      const listed = await t.createKey(admin, 'listed', { allowed_cidrs: ['10.0.0.0/8'] });
      await requireAllowlist(admin, true);
      expectError(
        await patch(admin, listed.id, { allowed_cidrs: null }),
        400,
        'INVALID_ARGUMENT',
        "allowed_cidrs is required: the organization's key policy requires an allowlist",
        'allowlist_required',
      );
      expectError(
        await patch(admin, listed.id, { allowed_cidrs: ['::/0'] }),
        400,
        'INVALID_ARGUMENT',
        `allowed_cidrs: "::/0" allows every address, which the organization's key policy forbids`,
        'allowlist_too_broad',
      );
      // The label and the rate limit of a key made before the policy may still change; its rotation needs a list.
      await patch(admin, before.id, { label: 'renamed', rate_limit: { requests: 1, window_seconds: 1 } }).expect(200);
      const rotate = (id: string) => t.http().post(`/v1/user-api-keys/${id}/rotate`).set(bearer(admin.token)).send({});
      expectError(
        await rotate(before.id),
        400,
        'INVALID_ARGUMENT',
        "allowed_cidrs is required: the organization's key policy requires an allowlist",
        'allowlist_required',
      );
      expect((await get(admin, before.id).expect(200)).body.api_key.status).toBe('ACTIVE');
      await patch(admin, before.id, { allowed_cidrs: ['192.0.2.0/24'] }).expect(200);
      expect((await rotate(before.id).expect(201)).body.api_key.allowed_cidrs).toEqual(['192.0.2.0/24']);
      expect((await rotate(listed.id).expect(201)).body.api_key.allowed_cidrs).toEqual(['10.0.0.0/8']);
    });

    it('refuses entries that together allow every IPv4 or every IPv6 address, at creation, by PATCH and at rotation', async () => {
      const admin = await user();
      const slash8s = (family: 'v4' | 'v6') =>
        Array.from({ length: 256 }, (_, i) => (family === 'v4' ? `${i}.0.0.0/8` : `${(i << 8).toString(16)}::/8`));
      // Made before the policy: a list of two /1s, every IPv4 address.
      const everyIpv4 = ['0.0.0.0/1', '128.0.0.0/1'];
      const before = await t.createKey(admin, 'before the policy', { allowed_cidrs: everyIpv4 });
      const listed = await t.createKey(admin, 'listed', { allowed_cidrs: ['10.0.0.0/8'] });
      await requireAllowlist(admin, true);
      const together = (family: string) =>
        `allowed_cidrs together allow every ${family} address, which the organization's key policy forbids`;
      const lists: Array<[string[], string]> = [
        [everyIpv4, 'IPv4'],
        [['128.0.0.0/1', '10.0.0.0/8', '0.0.0.0/2', '64.0.0.0/2'], 'IPv4'],
        [['0.0.0.0/1', '100.0.0.0/8', '0.0.0.0/1', '128.0.0.0/2', '160.0.0.0/3', '192.0.0.0/2'], 'IPv4'],
        [['::ffff:0.0.0.0/97', '::ffff:128.0.0.0/97'], 'IPv4'],
        [['::/1', '8000::/1'], 'IPv6'],
        [['2001:db8::/32', '::/1', '8000::/2', 'c000::/2'], 'IPv6'],
      ];
      for (const [list, family] of lists) {
        expectError(
          await create(admin, { allowed_cidrs: list }),
          400,
          'INVALID_ARGUMENT',
          together(family),
          'allowlist_too_broad',
        );
        expectError(
          await patch(admin, listed.id, { allowed_cidrs: list }),
          400,
          'INVALID_ARGUMENT',
          together(family),
          'allowlist_too_broad',
        );
      }
      // 256 /8s are more than a list holds: refused for that; 100 of them are a list like any other.
      expectError(
        await create(admin, { allowed_cidrs: slash8s('v4') }),
        400,
        'INVALID_ARGUMENT',
        'allowed_cidrs holds at most 100 entries',
        'allowed_cidrs_invalid',
      );
      await create(admin, { allowed_cidrs: slash8s('v4').slice(0, 100) }).expect(201);
      await create(admin, { allowed_cidrs: ['0.0.0.0/1', '128.0.0.0/2', '2001:db8::/32', '8000::/1'] }).expect(201);
      expect(await keyCount(admin)).toBe(4);
      expect((await get(admin, listed.id).expect(200)).body.api_key.allowed_cidrs).toEqual(['10.0.0.0/8']);
      expect(await updates(listed.id)).toBe(0);
      // A key whose list was made before the policy keeps working, but is rotated only once its list is narrowed.
      const rotate = (id: string) => t.http().post(`/v1/user-api-keys/${id}/rotate`).set(bearer(admin.token)).send({});
      expect(await t.exchange(before.value)).toEqual(expect.any(String));
      expectError(await rotate(before.id), 400, 'INVALID_ARGUMENT', together('IPv4'), 'allowlist_too_broad');
      expect((await get(admin, before.id).expect(200)).body.api_key).toMatchObject({
        status: 'ACTIVE',
        allowed_cidrs: everyIpv4,
        replaced_by: null,
      });
      expect(await keyCount(admin)).toBe(4);
      await patch(admin, before.id, { allowed_cidrs: ['0.0.0.0/1'] }).expect(200);
      expect((await rotate(before.id).expect(201)).body.api_key.allowed_cidrs).toEqual(['0.0.0.0/1']);
    });
  });
});
