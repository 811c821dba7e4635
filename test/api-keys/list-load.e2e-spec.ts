import { DataSource } from 'typeorm';
import { seedRevoked } from '../support/api-key-seeds';
import { bearer } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../support/test-app';

const REVOKED = 100_000;
const WINDOW = 10_000;

/**
 * GET /v1/user-api-keys (and GET /v1/organization/api-keys) for an owner with 100,000 revoked keys (docs/api.md#conventions,
 * docs/operations.md#one-member-cannot-slow-everyone): the answers are bounded by the list window,
 * and every statement runs under the statement timeout. What each list request takes, and the latency
 * of another user's exchanges while such lists run in a loop, are measured by
 * bench/timings/list-load.bench.ts (`npm run bench:timings`).
 */
describe(`listing keys of an owner with ${REVOKED} revoked keys on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let hoarder: TestUser;
  let active: string[];

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    hoarder = await t.user({ org: 'list-load' });
    // Three active keys older than every revoked one: newest first, they come after all 100,000.
    active = [];
    for (let i = 0; i < 3; i += 1) active.unshift((await t.createKey(hoarder, `active ${i}`)).id);
    await seedRevoked(t, hoarder, REVOKED);
  }, 120_000);
  afterAll(() => t.close());

  const list = (query: string) => t.http().get(`/v1/user-api-keys${query}`).set(bearer(hoarder.token));
  const get = (path: string) => t.http().get(path).set(bearer(hoarder.token));

  it('answers within the window: the active keys, a total_count of at most 10,000, pages up to it', async () => {
    const activeList = await list('').expect(200);
    expect(activeList.body.total_count).toBe(3);
    expect(activeList.body.api_keys.map((key: { id: string }) => key.id)).toEqual(active);

    const all = await list('?include_revoked=true&limit=100').expect(200);
    expect(all.body.total_count).toBe(WINDOW);
    expect(all.body.api_keys).toHaveLength(100);

    // The last page of the window holds keys 9,901-10,000; one with limit 30 stops at the window too.
    const last = await list('?include_revoked=true&page=100&limit=100').expect(200);
    expect(last.body).toMatchObject({ page: 100, limit: 100, total_count: WINDOW });
    expect(last.body.api_keys).toHaveLength(100);
    const cut = await list('?include_revoked=true&page=334&limit=30').expect(200);
    expect(cut.body.api_keys).toHaveLength(10);
    expect(cut.body.api_keys.at(-1)).toEqual(last.body.api_keys.at(-1));

    await list('?include_revoked=true&page=1000&limit=100').expect(400);
  });

  it("answers the organization's list within the window the same way (the hoarder is its admin)", async () => {
    const organizationList = (query: string) => get(`/v1/organization/api-keys${query}`);
    const activeList = await organizationList('').expect(200);
    expect(activeList.body.total_count).toBe(3);
    expect(activeList.body.api_keys.map((key: { id: string }) => key.id)).toEqual(active);

    const last = await organizationList('?include_revoked=true&page=100&limit=100').expect(200);
    expect(last.body).toMatchObject({ page: 100, limit: 100, total_count: WINDOW });
    expect(last.body.api_keys).toHaveLength(100);
    // The same keys as the owner's own list, each with the owner's e-mail address.
    const own = (await list('?include_revoked=true&page=100&limit=100').expect(200)).body;
    expect(last.body).toStrictEqual({
      ...own,
      // Revoked by a seed, not through the API: no audit entry says who.
      api_keys: own.api_keys.map((key: object) => ({
        ...key,
        owner_email: expect.stringContaining('@'),
        revoked_by: null,
      })),
    });
    const cut = await organizationList('?include_revoked=true&page=334&limit=30').expect(200);
    expect(cut.body.api_keys).toHaveLength(10);
    await organizationList('?include_revoked=true&page=101&limit=100').expect(400);
  });

  (DATABASE_KIND === 'postgres' ? it : it.skip)(
    'runs every statement, the list included, under DATABASE_STATEMENT_TIMEOUT_MS on every pooled connection',
    async () => {
      const dataSource = t.get(DataSource);
      const settings = await Promise.all(
        Array.from({ length: 12 }, () =>
          dataSource.query<Array<{ statement_timeout: string }>>('SHOW statement_timeout'),
        ),
      );
      expect(settings.map((rows) => rows[0].statement_timeout)).toEqual(Array(12).fill('1s'));
    },
  );
});
