import { AuditRepository } from '../../src/audit/audit.repository';
import { IdentityService } from '../../src/identity/identity.service';
import { bearer, expectError, ISO_MS } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';
import { createIdentity, trustIssuer } from '../workload-identities/fixtures';

/**
 * Who revoked a credential (docs/api.md#who-revoked-a-credential): its owner or an admin reads it from the revocation's
 * audit entry, for keys and workload identities alike; an admin reads any one credential of the organization; nobody
 * reads another organization's.
 */
describe(`who revoked a credential on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let orgs = 0;

  beforeAll(async () => {
    t = await createTestApp();
  });
  afterAll(() => t?.close());

  async function organization(): Promise<{ admin: TestUser; member: TestUser; other: TestUser }> {
    const org = `revoked-by-${++orgs}`;
    return {
      admin: await t.user({ org, role: 'admin' }),
      member: await t.user({ org, role: 'member' }),
      other: await t.user({ org, role: 'member' }),
    };
  }

  const get = (token: string, path: string) => t.http().get(path).set(bearer(token));
  const revokedBy = async (token: string, path: string): Promise<unknown> =>
    (await get(token, `${path}/revoked-by`).expect(200)).body;
  const byPerson = (user: TestUser, reason: string, apiKeyId: string | null = null) => ({
    revoked_by: {
      at: expect.stringMatching(ISO_MS),
      reason,
      user_id: user.userId,
      email: user.email,
      api_key_id: apiKeyId,
    },
  });

  it("tells a key's owner and the admins who revoked it and why; null while it is not revoked", async () => {
    const { admin, member } = await organization();
    const own = await t.createKey(member, 'laptop');
    const byAdmin = await t.createKey(member, 'ci');
    const rotated = await t.createKey(member, 'deploys');
    expect(await revokedBy(member.token, `/v1/user-api-keys/${own.id}`)).toStrictEqual({ revoked_by: null });
    expect(await revokedBy(admin.token, `/v1/organization/api-keys/${own.id}`)).toStrictEqual({ revoked_by: null });

    await t.http().delete(`/v1/user-api-keys/${own.id}`).set(bearer(member.token)).expect(200);
    // An admin's revocation made with an access token of a key of theirs: that key is named too.
    const manager = await t.createKey(admin, 'manager', { scopes: ['api_keys:manage'] });
    const managerToken = await t.exchange(manager.value);
    await t.http().delete(`/v1/organization/api-keys/${byAdmin.id}`).set(bearer(managerToken)).expect(200);
    await t
      .http()
      .post(`/v1/user-api-keys/${rotated.id}/rotate`)
      .set(bearer(member.token))
      .send({ grace_period_seconds: 0 })
      .expect(201);

    for (const [token, prefix] of [
      [member.token, '/v1/user-api-keys'],
      [admin.token, '/v1/organization/api-keys'],
    ]) {
      expect(await revokedBy(token, `${prefix}/${own.id}`)).toStrictEqual(byPerson(member, 'user'));
      expect(await revokedBy(token, `${prefix}/${byAdmin.id}`)).toStrictEqual(byPerson(admin, 'admin', manager.id));
      expect(await revokedBy(token, `${prefix}/${rotated.id}`)).toStrictEqual(byPerson(member, 'rotated'));
    }
    // When: the revocation's, as revoked_at says it.
    const key = (await get(member.token, `/v1/user-api-keys/${own.id}`).expect(200)).body.api_key;
    const answer = (await revokedBy(member.token, `/v1/user-api-keys/${own.id}`)) as { revoked_by: { at: string } };
    expect(Math.abs(Date.parse(answer.revoked_by.at) - Date.parse(key.revoked_at as string))).toBeLessThan(1000);
  });

  it("reads any one key of the organization for an admin, with its owner's e-mail", async () => {
    const { admin, member } = await organization();
    const key = await t.createKey(member, 'laptop');
    const read = await get(admin.token, `/v1/organization/api-keys/${key.id}`).expect(200);
    const own = await get(member.token, `/v1/user-api-keys/${key.id}`).expect(200);
    expect(read.body).toStrictEqual({ api_key: { ...own.body.api_key, owner_email: member.email, revoked_by: null } });
  });

  it("lists the organization's credentials with who revoked each: one read of the trail for a page, none without a revoked one", async () => {
    const { admin, member, other } = await organization();
    const [byOwner, byAdmin, active] = [
      await t.createKey(member, 'laptop'),
      await t.createKey(other, 'ci'),
      await t.createKey(member, 'deploys'),
    ];
    await t.http().delete(`/v1/user-api-keys/${byOwner.id}`).set(bearer(member.token)).expect(200);
    await t.http().delete(`/v1/organization/api-keys/${byAdmin.id}`).set(bearer(admin.token)).expect(200);
    const issuer = await trustIssuer(t, member.organizationId);
    const identity = await createIdentity(t, member, issuer);
    await t.http().delete(`/v1/workload-identities/${identity.id}`).set(bearer(member.token)).expect(200);

    const trail = t.get(AuditRepository);
    const pageReads = jest.spyOn(trail, 'findLatestByTarget');
    const oneReads = jest.spyOn(trail, 'findPage');
    const emailReads = jest.spyOn(t.get(IdentityService), 'emailsOf');
    try {
      const keys = (await get(admin.token, '/v1/organization/api-keys?include_revoked=true').expect(200)).body.api_keys;
      const revokers = new Map(keys.map((key: { id: string; revoked_by: unknown }) => [key.id, key.revoked_by]));
      expect(revokers.get(byOwner.id)).toStrictEqual(byPerson(member, 'user').revoked_by);
      expect(revokers.get(byAdmin.id)).toStrictEqual(byPerson(admin, 'admin').revoked_by);
      expect(revokers.get(active.id)).toBeNull();
      // One read of the trail for the page and one of the addresses (owners and revokers), not one a row.
      expect([pageReads.mock.calls.length, oneReads.mock.calls.length, emailReads.mock.calls.length]).toEqual([
        1, 0, 1,
      ]);
      expect(pageReads.mock.calls[0][2]).toEqual(expect.arrayContaining([byOwner.id, byAdmin.id]));
      expect(pageReads.mock.calls[0][2]).toHaveLength(2);

      // Only active ones on the page: no read of the trail.
      pageReads.mockClear();
      await get(admin.token, '/v1/organization/api-keys').expect(200);
      expect(pageReads).not.toHaveBeenCalled();

      const identities = (
        await get(admin.token, '/v1/organization/workload-identities?include_revoked=true').expect(200)
      ).body.workload_identities;
      expect(identities).toEqual([expect.objectContaining({ id: identity.id, ...byPerson(member, 'user') })]);
      // The owner's own lists do not carry it.
      const own = (await get(member.token, '/v1/user-api-keys?include_revoked=true').expect(200)).body.api_keys;
      expect(own.every((key: object) => !('revoked_by' in key))).toBe(true);
    } finally {
      pageReads.mockRestore();
      oneReads.mockRestore();
      emailReads.mockRestore();
    }
  });

  it('tells who revoked a workload identity, to its owner and the admins', async () => {
    const { admin, member } = await organization();
    const issuer = await trustIssuer(t, member.organizationId);
    const identity = await createIdentity(t, member, issuer);
    const path = `/v1/workload-identities/${identity.id}`;
    const organizationPath = `/v1/organization/workload-identities/${identity.id}`;
    expect(await revokedBy(member.token, path)).toStrictEqual({ revoked_by: null });
    await t.http().delete(organizationPath).set(bearer(admin.token)).expect(200);
    expect(await revokedBy(member.token, path)).toStrictEqual(byPerson(admin, 'admin'));
    expect(await revokedBy(admin.token, organizationPath)).toStrictEqual(byPerson(admin, 'admin'));
    const read = await get(admin.token, organizationPath).expect(200);
    expect(read.body.workload_identity).toMatchObject({
      id: identity.id,
      status: 'REVOKED',
      owner_email: member.email,
    });
  });

  it("answers another member's or another organization's credential 404, and a member's organization route 403", async () => {
    const { admin, member, other } = await organization();
    const elsewhere = await organization();
    const key = await t.createKey(member, 'laptop');
    const issuer = await trustIssuer(t, member.organizationId);
    const identity = await createIdentity(t, member, issuer);
    const keyNotFound = [404, 'NOT_FOUND', 'api key not found', 'api_key_not_found'] as const;
    const identityNotFound = [404, 'NOT_FOUND', 'workload identity not found', 'workload_identity_not_found'] as const;
    expectError(await get(other.token, `/v1/user-api-keys/${key.id}/revoked-by`), ...keyNotFound);
    expectError(await get(admin.token, `/v1/user-api-keys/${key.id}/revoked-by`), ...keyNotFound);
    for (const path of [`/v1/organization/api-keys/${key.id}`, `/v1/organization/api-keys/${key.id}/revoked-by`]) {
      expectError(await get(elsewhere.admin.token, path), ...keyNotFound);
      expectError(
        await get(member.token, path),
        403,
        'PERMISSION_DENIED',
        'insufficient permissions',
        'insufficient_permissions',
      );
    }
    expectError(await get(other.token, `/v1/workload-identities/${identity.id}/revoked-by`), ...identityNotFound);
    for (const path of [
      `/v1/organization/workload-identities/${identity.id}`,
      `/v1/organization/workload-identities/${identity.id}/revoked-by`,
    ]) {
      expectError(await get(elsewhere.admin.token, path), ...identityNotFound);
    }
    expect(await revokedBy(admin.token, `/v1/organization/api-keys/${key.id}`)).toStrictEqual({ revoked_by: null });
  });
});
