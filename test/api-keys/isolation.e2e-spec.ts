import { randomBytes } from 'node:crypto';
import { bearer, expectError } from '../support/http-assertions';
import { createTestApp, TestApp, TestUser } from '../support/test-app';

/**
 * One user can never see or touch another's keys (docs/api.md: someone else's id is 404,
 * never 403; docs/architecture.md#code-conventions: cross-user and cross-organization cases for every id-taking route).
 */
describe('isolation between users and organizations', () => {
  let t: TestApp;
  let owner: TestUser;
  let colleague: TestUser;
  let outsider: TestUser;
  let ownerKey: { id: string; value: string };

  beforeAll(async () => {
    t = await createTestApp();
    owner = await t.user({ org: 'iso-a', role: 'admin' });
    colleague = await t.user({ org: 'iso-a', role: 'admin' });
    outsider = await t.user({ org: 'iso-b', role: 'admin' });
    ownerKey = await t.createKey(owner, 'owner key');
    await t.createKey(colleague, 'colleague key');
    await t.createKey(outsider, 'outsider key');
  });
  afterAll(() => t.close());

  const expectOwnerKeyUntouched = async () => {
    const got = await t.http().get(`/v1/user-api-keys/${ownerKey.id}`).set(bearer(owner.token)).expect(200);
    expect(got.body.api_key.status).toBe('ACTIVE');
    await t.exchange(ownerKey.value);
  };

  const intruders: Array<[string, () => TestUser]> = [
    ['another user of the same organization (even an admin)', () => colleague],
    ['a user of another organization', () => outsider],
  ];

  describe.each(intruders)('%s', (_name, intruder) => {
    it('GET /v1/user-api-keys/:id -> 404 "api key not found"', async () => {
      const response = await t.http().get(`/v1/user-api-keys/${ownerKey.id}`).set(bearer(intruder().token));
      expectError(response, 404, 'NOT_FOUND', 'api key not found', 'api_key_not_found');
    });

    it('DELETE /v1/user-api-keys/:id -> 404 and the key stays active', async () => {
      const response = await t.http().delete(`/v1/user-api-keys/${ownerKey.id}`).set(bearer(intruder().token));
      expectError(response, 404, 'NOT_FOUND', 'api key not found', 'api_key_not_found');
      await expectOwnerKeyUntouched();
    });

    it('POST /v1/user-api-keys/:id/rotate -> 404 and the key stays active', async () => {
      const response = await t.http().post(`/v1/user-api-keys/${ownerKey.id}/rotate`).set(bearer(intruder().token));
      expectError(response, 404, 'NOT_FOUND', 'api key not found', 'api_key_not_found');
      await expectOwnerKeyUntouched();
    });

    it('with an access token of their own key: GET, DELETE and rotate -> 404', async () => {
      const own = await t.createKey(intruder(), 'every key permission', {
        scopes: ['api_keys:create', 'api_keys:read', 'api_keys:revoke'],
      });
      const accessToken = await t.exchange(own.value);
      expectError(
        await t.http().get(`/v1/user-api-keys/${ownerKey.id}`).set(bearer(accessToken)),
        404,
        'NOT_FOUND',
        'api key not found',
        'api_key_not_found',
      );
      expectError(
        await t.http().delete(`/v1/user-api-keys/${ownerKey.id}`).set(bearer(accessToken)),
        404,
        'NOT_FOUND',
        'api key not found',
        'api_key_not_found',
      );
      expectError(
        await t.http().post(`/v1/user-api-keys/${ownerKey.id}/rotate`).set(bearer(accessToken)),
        404,
        'NOT_FOUND',
        'api key not found',
        'api_key_not_found',
      );
      await expectOwnerKeyUntouched();
    });

    it("GET /v1/user-api-keys never lists the owner's keys, revoked or not", async () => {
      const listed = await t
        .http()
        .get('/v1/user-api-keys?include_revoked=true&limit=100')
        .set(bearer(intruder().token))
        .expect(200);
      expect(listed.body.api_keys.length).toBeGreaterThan(0);
      for (const key of listed.body.api_keys) {
        expect(key.user_id).toBe(intruder().userId);
        expect(key.organization_id).toBe(intruder().organizationId);
      }
      expect(listed.body.api_keys.map((k: { id: string }) => k.id)).not.toContain(ownerKey.id);
      expect(listed.body.total_count).toBe(listed.body.api_keys.length);
    });
  });

  it('a revoked key of someone else is 404 as well (its state is not revealed)', async () => {
    const victim = await t.user({ org: 'iso-a' });
    const { id } = await t.createKey(victim);
    await t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(victim.token)).expect(200);
    for (const intruder of [colleague, outsider]) {
      expectError(
        await t.http().get(`/v1/user-api-keys/${id}`).set(bearer(intruder.token)),
        404,
        'NOT_FOUND',
        'api key not found',
        'api_key_not_found',
      );
    }
  });

  describe('one user in two organizations', () => {
    let inA: TestUser;
    let inB: TestUser;
    let keyA: { id: string; value: string };
    let keyB: { id: string; value: string };

    beforeAll(async () => {
      const email = `both-${randomBytes(4).toString('hex')}@example.com`;
      inA = await t.user({ org: 'iso-a', email });
      inB = await t.user({ org: 'iso-b', email });
      keyA = await t.createKey(inA, 'in a', { scopes: ['api_keys:create', 'api_keys:read'] });
      keyB = await t.createKey(inB, 'in b');
    });

    it('is one user with a session token per organization', () => {
      expect(inA.userId).toBe(inB.userId);
      expect(inA.organizationId).not.toBe(inB.organizationId);
    });

    it('sees only the keys of the organization the token is for', async () => {
      const listA = await t.http().get('/v1/user-api-keys').set(bearer(inA.token)).expect(200);
      const listB = await t.http().get('/v1/user-api-keys').set(bearer(inB.token)).expect(200);
      expect(listA.body.api_keys.map((k: { id: string }) => k.id)).toEqual([keyA.id]);
      expect(listB.body.api_keys.map((k: { id: string }) => k.id)).toEqual([keyB.id]);
      expect(listA.body.api_keys[0].organization_id).toBe(inA.organizationId);
      expect(listB.body.api_keys[0].organization_id).toBe(inB.organizationId);
    });

    it("cannot read nor revoke the other organization's key through this one", async () => {
      expectError(
        await t.http().get(`/v1/user-api-keys/${keyB.id}`).set(bearer(inA.token)),
        404,
        'NOT_FOUND',
        'api key not found',
        'api_key_not_found',
      );
      expectError(
        await t.http().delete(`/v1/user-api-keys/${keyA.id}`).set(bearer(inB.token)),
        404,
        'NOT_FOUND',
        'api key not found',
        'api_key_not_found',
      );
      const stillA = await t.http().get(`/v1/user-api-keys/${keyA.id}`).set(bearer(inA.token)).expect(200);
      expect(stillA.body.api_key.status).toBe('ACTIVE');
    });

    it('an access token from the key of one organization acts in that organization only', async () => {
      const accessA = await t.exchange(keyA.value);
      const listed = await t.http().get('/v1/user-api-keys').set(bearer(accessA)).expect(200);
      expect(listed.body.api_keys.map((k: { id: string }) => k.id)).toEqual([keyA.id]);
      const created = await t.http().post('/v1/user-api-keys').set(bearer(accessA)).send({}).expect(201);
      expect(created.body.api_key.organization_id).toBe(inA.organizationId);
    });
  });
});
