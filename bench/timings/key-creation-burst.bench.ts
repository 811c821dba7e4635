import { apiKeyAuth, bearer } from '../../test/support/http-assertions';
import { createTestApp, DATABASE_KIND, TestApp, TestUser } from '../../test/support/test-app';

const CAP = 10;

/**
 * `npm run bench:timings`: one member's burst of key creations against the active-key cap
 * (docs/operations.md, "The active-key cap under concurrency"). Prints how long the burst took and
 * another user's exchange latency meanwhile. The cap itself is asserted by
 * test/api-keys/api-key-limits.e2e-spec.ts.
 */
describe(`API key creations at the cap on ${DATABASE_KIND}`, () => {
  let t: TestApp;
  beforeAll(async () => {
    t = await createTestApp({ env: { API_KEY_MAX_ACTIVE_PER_USER: String(CAP) } });
  });
  afterAll(() => t.close());

  const create = (user: TestUser) => t.http().post('/v1/user-api-keys').set(bearer(user.token)).send({});

  it('a burst of 200 parallel creations by one member: the exchange latency of another user meanwhile', async () => {
    const user = await t.user({ org: 'limits' });
    const bystander = await t.user({ org: 'limits-bystander' });
    const { value } = await t.createKey(bystander);
    let done = false;
    const latencies: number[] = [];
    const exchanges = (async () => {
      while (!done) {
        const started = performance.now();
        await t.http().post('/v1/token').set(apiKeyAuth(value)).expect(200);
        latencies.push(performance.now() - started);
      }
    })();
    const started = performance.now();
    const responses = await Promise.all(Array.from({ length: 200 }, () => create(user)));
    const burstMs = performance.now() - started;
    done = true;
    await exchanges;
    expect(responses.filter((response) => response.status === 201)).toHaveLength(CAP);
    expect(responses.filter((response) => response.status === 400)).toHaveLength(200 - CAP);
    latencies.sort((a, b) => a - b);
    const at = (p: number): string =>
      latencies[Math.min(latencies.length - 1, Math.ceil(p * latencies.length) - 1)].toFixed(1);
    console.log(
      `[${DATABASE_KIND}] 200 parallel creations by one member (cap ${CAP}) in ${burstMs.toFixed(0)} ms; ` +
        `another user's exchanges meanwhile: ${latencies.length}, p50 ${at(0.5)} ms, p99 ${at(0.99)} ms, max ${at(1)} ms`,
    );
  }, 60_000);
});
