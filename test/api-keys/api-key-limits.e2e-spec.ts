import { DataSource } from 'typeorm';
import { apiKeyAuth, bearer, expectError, expectInvalidArgument } from '../support/http-assertions';
import { freezeDate, nextWholeSecond } from '../support/clock';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

const CAP = 10;

/**
 * One member cannot make everyone's requests slower (docs/api.md#post-v1user-api-keys,
 * docs/api.md#conventions): a user holds at most API_KEY_MAX_ACTIVE_PER_USER active keys per
 * organization, also under concurrent creations, counting neither expired keys nor (without a grace) the key a
 * rotation replaces, and a list page must start inside the list window.
 */
describe(`API key limits on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let dataSource: DataSource;
  beforeAll(async () => {
    t = await createTestApp({ env: { API_KEY_MAX_ACTIVE_PER_USER: String(CAP) } });
    dataSource = t.get(DataSource);
  });
  afterAll(() => t.close());
  afterEach(() => jest.useRealTimers());

  const create = (user: TestUser, body: object = {}) =>
    t.http().post('/v1/user-api-keys').set(bearer(user.token)).send(body);
  const rotate = (owner: TestUser, id: string, body: object = {}) =>
    t.http().post(`/v1/user-api-keys/${id}/rotate`).set(bearer(owner.token)).send(body);
  const activeKeys = async (user: TestUser): Promise<number> => {
    const rows: Array<{ n: number | string }> = await dataSource.query(
      `SELECT COUNT(*) AS n FROM api_keys WHERE user_id = '${user.userId}'
         AND organization_id = '${user.organizationId}' AND status = 'ACTIVE'`,
    );
    return Number(rows[0].n);
  };
  const creationsAudited = async (user: TestUser): Promise<number> => {
    const rows: Array<{ n: number | string }> = await dataSource.query(
      `SELECT COUNT(*) AS n FROM audit_events WHERE actor_user_id = '${user.userId}' AND action = 'api_key.created'`,
    );
    return Number(rows[0].n);
  };
  const expectLimitReached = (response: { status: number; body: unknown }): void =>
    expectError(response as never, 400, 'FAILED_PRECONDITION', 'api key limit reached', 'api_key_limit_reached');

  describe('active keys per user and organization', () => {
    it(`refuses key ${CAP + 1} with 400 FAILED_PRECONDITION and stores nothing for it`, async () => {
      const user = await t.user({ org: 'limits' });
      for (let i = 0; i < CAP; i += 1) await t.createKey(user);
      expectLimitReached(await create(user));
      expect(await activeKeys(user)).toBe(CAP);
      expect(await creationsAudited(user)).toBe(CAP);
      const listed = await t.http().get('/v1/user-api-keys?limit=100').set(bearer(user.token)).expect(200);
      expect(listed.body.total_count).toBe(CAP);
    });

    it('does not count revoked keys: revoking one makes room for one', async () => {
      const user = await t.user({ org: 'limits' });
      const created = [];
      for (let i = 0; i < CAP; i += 1) created.push(await t.createKey(user));
      await t.http().delete(`/v1/user-api-keys/${created[0].id}`).set(bearer(user.token)).expect(200);
      await create(user).expect(201);
      expectLimitReached(await create(user));
      expect(await activeKeys(user)).toBe(CAP);
    });

    it('counts per user and per organization', async () => {
      const user = await t.user({ org: 'limits' });
      for (let i = 0; i < CAP; i += 1) await t.createKey(user);
      const colleague = await t.user({ org: 'limits' });
      await create(colleague).expect(201);
      const sameUserElsewhere = await t.user({ org: 'limits-elsewhere', email: user.email });
      await create(sameUserElsewhere).expect(201);
      expectLimitReached(await create(user));
    });

    it(`20 parallel creations with ${CAP - 5} keys stored, through two instances: exactly 5 succeed`, async () => {
      const user = await t.user({ org: 'limits' });
      for (let i = 0; i < CAP - 5; i += 1) await t.createKey(user);
      // Half of them through a second instance on the same database: the cap holds across instances
      // (an in-process queue alone would not do it).
      const second = await createTestApp({ database: t.database, env: { API_KEY_MAX_ACTIVE_PER_USER: String(CAP) } });
      const responses = await Promise.all(
        Array.from({ length: 20 }, (_, i) =>
          (i % 2 === 0 ? t : second).http().post('/v1/user-api-keys').set(bearer(user.token)).send({}),
        ),
      ).finally(() => second.close());
      const statuses = responses.map((response) => response.status).sort();
      expect(statuses).toEqual([...Array(5).fill(201), ...Array(15).fill(400)]);
      for (const response of responses.filter((r) => r.status === 400)) expectLimitReached(response);
      expect(await activeKeys(user)).toBe(CAP);
      expect(await creationsAudited(user)).toBe(CAP);
    });

    it('at the cap: a rotation does not count the key it replaces, so at most one key over the cap during a grace', async () => {
      const owner = await t.user({ org: 'cap-rotation' });
      const keys = [];
      for (let i = 0; i < CAP; i += 1) keys.push(await t.createKey(owner));
      expectLimitReached(await create(owner));
      // Without a grace the old key is revoked in the same transaction.
      const replaced = await rotate(owner, keys[0].id).expect(201);
      expectLimitReached(await create(owner));
      // With a grace the old key still works: CAP + 1 usable keys until it expires.
      await rotate(owner, keys[1].id, { grace_period_seconds: 3600 }).expect(201);
      // Every other rotation with a grace now finds CAP other usable keys: refused, nothing changed.
      const refused = await rotate(owner, keys[2].id, { grace_period_seconds: 3600 });
      expectLimitReached(refused);
      const third = await t.http().get(`/v1/user-api-keys/${keys[2].id}`).set(bearer(owner.token)).expect(200);
      expect(third.body.api_key).toMatchObject({ status: 'ACTIVE', expires_at: null });
      expectLimitReached(await rotate(owner, replaced.body.api_key.id, { grace_period_seconds: 60 }));
      // Even without a grace: with the old key gone there would still be CAP others.
      expectLimitReached(await rotate(owner, keys[2].id));
      // Once the key in its grace is revoked (or has expired), rotations fit again.
      await t.http().delete(`/v1/user-api-keys/${keys[1].id}`).set(bearer(owner.token)).expect(200);
      await rotate(owner, keys[2].id, { grace_period_seconds: 60 }).expect(201);
    });

    it('does not count expired keys: once they expire, new keys fit', async () => {
      const owner = await t.user({ org: 'cap-expiry' });
      const now = nextWholeSecond();
      freezeDate(now);
      for (let i = 0; i < CAP; i += 1)
        await create(owner, { expires_at: new Date(now + 60_000).toISOString() }).expect(201);
      expectLimitReached(await create(owner));
      jest.setSystemTime(now + 60_000);
      for (let i = 0; i < CAP; i += 1) await create(owner).expect(201);
      expectLimitReached(await create(owner));
    });
  });

  it('a burst of 200 parallel creations by one member: CAP keys, while another user exchanges', async () => {
    const user = await t.user({ org: 'limits' });
    const bystander = await t.user({ org: 'limits-bystander' });
    const { value } = await t.createKey(bystander);
    let done = false;
    const exchanges = (async () => {
      while (!done) await t.http().post('/v1/token').set(apiKeyAuth(value)).expect(200);
    })();
    const responses = await Promise.all(Array.from({ length: 200 }, () => create(user)));
    done = true;
    await exchanges;
    expect(responses.filter((response) => response.status === 201)).toHaveLength(CAP);
    expect(responses.filter((response) => response.status === 400)).toHaveLength(200 - CAP);
    expect(await activeKeys(user)).toBe(CAP);
  }, 60_000);

  describe('list window: (page - 1) * limit < 10000', () => {
    it.each([
      ['page=500', 20],
      ['page=100&limit=100', 100],
      ['page=10000&limit=1', 1],
      ['page=334&limit=30', 30],
      ['page=500&include_revoked=true', 20],
    ])('accepts ?%s', async (query, limit) => {
      const user = await t.user({ org: 'limits' });
      const response = await t.http().get(`/v1/user-api-keys?${query}`).set(bearer(user.token)).expect(200);
      expect(response.body).toMatchObject({ api_keys: [], limit, total_count: 0 });
    });

    it.each([
      ['page=501'],
      ['page=101&limit=100'],
      ['page=10001&limit=1'],
      ['page=335&limit=30'],
      ['page=999999999'],
      ['page=999999999&limit=100&include_revoked=true'],
    ])('refuses ?%s with 400', async (query) => {
      const user = await t.user({ org: 'limits' });
      expectInvalidArgument(await t.http().get(`/v1/user-api-keys?${query}`).set(bearer(user.token)));
    });
  });
});
