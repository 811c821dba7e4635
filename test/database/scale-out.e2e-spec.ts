import { createTestApp, DATABASE_KIND, TestApp } from '../support/test-app';

/**
 * Two instances on one database (docs/architecture.md, "Scale-out"): nothing that decides whether a
 * key or token is valid lives in one process's memory.
 */
describe(`scale-out: two instances on one ${DATABASE_KIND} database`, () => {
  let first: TestApp;
  let second: TestApp;

  beforeAll(async () => {
    first = await createTestApp();
    second = await createTestApp({ database: first.database });
  }, 60_000);
  afterAll(async () => {
    await second.close();
    await first.close();
  });

  it('a key created on one instance is exchanged on the other, and its token works on both', async () => {
    const user = await first.user();
    const key = await first.createKey(user);
    const token = await second.exchange(key.value);
    for (const instance of [first, second]) {
      await instance.http().get(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${token}`).expect(200);
    }
  });

  it('a key revoked through one instance is refused by the other at once', async () => {
    const user = await first.user();
    const key = await first.createKey(user);
    await second.exchange(key.value);

    await first.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${user.token}`).expect(200);

    const refused = await second.http().post('/v1/token').set('Authorization', `ApiKey ${key.value}`).expect(401);
    expect(refused.body).toEqual({ code: 'UNAUTHENTICATED', message: 'api key revoked', reason: 'api_key_revoked' });
  });

  it('an access token minted by one instance is refused by the other right after the revocation', async () => {
    const user = await first.user();
    const key = await first.createKey(user);
    const token = await first.exchange(key.value);
    await second.http().get('/v1/user-api-keys').set('Authorization', `Bearer ${token}`).expect(200);

    await second.http().delete(`/v1/user-api-keys/${key.id}`).set('Authorization', `Bearer ${user.token}`).expect(200);

    for (const instance of [second, first]) {
      const refused = await instance
        .http()
        .get('/v1/user-api-keys')
        .set('Authorization', `Bearer ${token}`)
        .expect(401);
      expect(refused.body).toEqual({
        code: 'UNAUTHENTICATED',
        message: 'user not authenticated',
        reason: 'credential_revoked',
      });
    }
  });

  it('a role change made through one instance applies on the other at once', async () => {
    const admin = await first.user({ org: 'scale-roles', role: 'admin' });
    await second.http().post('/v1/user-api-keys').set('Authorization', `Bearer ${admin.token}`).send({}).expect(201);
    await first.user({ org: 'scale-roles', email: admin.email, role: 'viewer' });
    const denied = await second
      .http()
      .post('/v1/user-api-keys')
      .set('Authorization', `Bearer ${admin.token}`)
      .send({})
      .expect(403);
    expect(denied.body).toEqual({
      code: 'PERMISSION_DENIED',
      message: 'insufficient permissions',
      reason: 'insufficient_permissions',
    });
  });
});
