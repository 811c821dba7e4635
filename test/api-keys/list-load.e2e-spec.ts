import { Client } from 'pg';
import { DataSource } from 'typeorm';
import { apiKeyAuth, bearer } from '../support/http-assertions';
import { createTestApp, DATABASE_KIND, POSTGRES_URL, TestApp, TestUser } from '../support/test-app';

const REVOKED = 100_000;
const WINDOW = 10_000;

/**
 * GET /v1/user-api-keys (and GET /v1/organization/api-keys) for an owner with 100,000 revoked keys (docs/api.md#conventions,
 * docs/operations.md#one-member-cannot-slow-everyone): the answers are bounded by the list window,
 * and the work of one list request does not grow with the owner's keys. Timings are printed, not
 * asserted: what each list request took, and the latency of another user's exchanges while such
 * lists run in a loop.
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
    expect(last.body).toStrictEqual((await list('?include_revoked=true&page=100&limit=100').expect(200)).body);
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

  it('prints the time of each list request, and exchange latency while the slowest runs in a loop', async () => {
    const queries = [
      '/v1/user-api-keys',
      '/v1/user-api-keys?include_revoked=true',
      '/v1/user-api-keys?include_revoked=true&page=100&limit=100',
      // Accepted before the list window existed (deep OFFSETs); 400 now.
      '/v1/user-api-keys?include_revoked=true&page=1000&limit=100',
      '/v1/user-api-keys?page=999999999&limit=100',
      // The organization's list: the same keys, through the organization's indexes.
      '/v1/organization/api-keys',
      '/v1/organization/api-keys?include_revoked=true',
      '/v1/organization/api-keys?include_revoked=true&page=100&limit=100',
    ];
    const timings: Array<{ query: string; status: number; median: number; max: number }> = [];
    for (const query of queries) {
      await get(query);
      const times: number[] = [];
      let status = 0;
      for (let i = 0; i < 7; i += 1) {
        const started = performance.now();
        status = (await get(query)).status;
        times.push(performance.now() - started);
      }
      times.sort((a, b) => a - b);
      timings.push({ query, status, median: times[3], max: times[6] });
    }
    for (const { query, status, median, max } of timings) {
      console.log(`[${DATABASE_KIND}] GET ${query}: ${status}, median ${ms(median)}, max ${ms(max)}`);
    }

    const user = await t.user({ org: 'list-load-bystander' });
    const { value } = await t.createKey(user);
    const exchanges = async (n: number): Promise<number[]> => {
      const latencies: number[] = [];
      for (let i = 0; i < n; i += 1) {
        const started = performance.now();
        const response = await t.http().post('/v1/token').set(apiKeyAuth(value));
        latencies.push(performance.now() - started);
        expect(response.status).toBe(200);
      }
      return latencies;
    };
    await exchanges(20);
    const quiet = await exchanges(500);

    const slowest = timings.filter((timing) => timing.status === 200).sort((a, b) => b.median - a.median)[0];
    const slowestQuery = slowest.query;
    // The same offered load before and after: 4 clients, each starting a list every 50 ms (or at
    // once when the previous one took longer), so that faster lists do not mean more of them.
    let stop = false;
    let lists = 0;
    const loops = Array.from({ length: 4 }, async () => {
      while (!stop) {
        const started = performance.now();
        expect((await get(slowestQuery)).status).toBe(200);
        lists += 1;
        const rest = 50 - (performance.now() - started);
        if (rest > 0) await new Promise((resolve) => setTimeout(resolve, rest));
      }
    });
    const loadedSince = performance.now();
    const loaded = await exchanges(500);
    const loadedSeconds = (performance.now() - loadedSince) / 1000;
    stop = true;
    await Promise.all(loops);

    console.log(
      `[${DATABASE_KIND}] POST /v1/token of another user, 500 in a row: ` +
        `quiet p50 ${ms(percentile(quiet, 50))} p99 ${ms(percentile(quiet, 99))}; ` +
        `with 4 clients listing GET ${slowestQuery} every 50 ms ` +
        `(${lists} lists in ${loadedSeconds.toFixed(1)} s) p50 ${ms(percentile(loaded, 50))} p99 ${ms(percentile(loaded, 99))}`,
    );
  }, 180_000);
});

const ms = (value: number): string => `${value.toFixed(1)} ms`;

function percentile(values: number[], p: number): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil((p / 100) * sorted.length) - 1)];
}

/** `count` REVOKED keys of `owner`, newer than any key made through the API, written in one statement. */
async function seedRevoked(t: TestApp, owner: TestUser, count: number): Promise<void> {
  const hash = 'ab'.repeat(32);
  if (DATABASE_KIND === 'sqlite') {
    await t.get(DataSource).query(
      `WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < ?)
       INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, scopes, created_at, updated_at, revoked_at)
       SELECT printf('00000000-0000-4000-8000-%012x', i), ?, ?, 'bulk', ?, 'REVOKED', 0, t, t, t
       FROM (SELECT i, strftime('%Y-%m-%dT%H:%M:%fZ', '2030-01-01', '+' || i || ' seconds') AS t FROM n)`,
      [count, owner.organizationId, owner.userId, hash],
    );
    // No ANALYZE: a SQLite database in service has no statistics either.
    return;
  }
  const schema = t.database.env.DATABASE_SCHEMA!;
  // A statement longer than the service's statement timeout: on a connection of its own.
  const client = new Client({ connectionString: POSTGRES_URL, options: `-c search_path=${schema}` });
  await client.connect();
  try {
    await client.query(
      `INSERT INTO api_keys (id, organization_id, user_id, label, secret_hash, status, scopes, created_at, updated_at, revoked_at)
       SELECT ('00000000-0000-4000-8000-' || lpad(to_hex(i), 12, '0'))::uuid, $1, $2, 'bulk', $3, 'REVOKED', 0, t, t, t
       FROM (SELECT i, timestamptz '2030-01-01T00:00:00Z' + i * interval '1 second' AS t
             FROM generate_series(1, $4::int) AS i) s`,
      [owner.organizationId, owner.userId, hash, count],
    );
    await client.query('ANALYZE api_keys');
  } finally {
    await client.end();
  }
}
