import { apiKeyAuth, bearer } from '../../test/support/http-assertions';
import { seedRevoked } from '../../test/support/api-key-seeds';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../../test/support/test-app';

const REVOKED = 100_000;

/**
 * `npm run bench:timings`: GET /v1/user-api-keys (and GET /v1/organization/api-keys) for an owner with
 * 100,000 revoked keys (docs/operations.md#one-member-cannot-slow-everyone), the figures of that
 * section. Prints what each list request took (median of 7), and the latency of another user's
 * exchanges, quiet and while the slowest accepted list runs in a loop. The answers themselves are
 * asserted by test/api-keys/list-load.e2e-spec.ts.
 */
describe(`listing keys of an owner with ${REVOKED} revoked keys on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  let hoarder: TestUser;

  beforeAll(async () => {
    t = await createTestApp();
    await t.app.listen(0, '127.0.0.1');
    hoarder = await t.user({ org: 'list-load' });
    for (let i = 0; i < 3; i += 1) await t.createKey(hoarder, `active ${i}`);
    await seedRevoked(t, hoarder, REVOKED);
  }, 120_000);
  afterAll(() => t.close());

  const get = (path: string) => t.http().get(path).set(bearer(hoarder.token));

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
