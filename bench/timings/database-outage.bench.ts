import type { Response } from 'supertest';
import { AppBehindProxy, closeAppBehindProxy, startAppBehindProxy } from '../../test/support/tcp-proxy';
import { POSTGRES_URL, TestUser } from '../../test/support/test-app';

/**
 * `npm run bench:timings` on PostgreSQL: how fast requests that need the database answer while it is
 * unreachable, and how soon the service recovers (docs/operations.md#failing-closed-when-the-database-is-unreachable,
 * "Measured"). A TCP proxy between the app and PostgreSQL simulates the outage. That the answers are
 * 503 UNAVAILABLE and the recovery comes within its budget is asserted by
 * test/database/database-outage.e2e-spec.ts.
 */
const describeOnPostgres = POSTGRES_URL === undefined ? describe.skip : describe;

describeOnPostgres('database outage timings (PostgreSQL only)', () => {
  let started: Partial<AppBehindProxy> = {};
  let user: TestUser;
  let keyValue: string;
  let accessToken: string;

  beforeAll(async () => {
    started = await startAppBehindProxy();
    user = await started.t!.user();
    keyValue = (await started.t!.createKey(user, 'outage')).value;
    accessToken = await started.t!.exchange(keyValue);
  }, 30_000);
  afterAll(() => closeAppBehindProxy(started), 30_000);

  const listKeys = (token: string): Promise<Response> =>
    started.t!.http().get('/v1/user-api-keys').set('Authorization', `Bearer ${token}`);
  const probes: Array<[string, () => Promise<Response>]> = [
    ['GET /v1/user-api-keys (session token: membership lookup)', () => listKeys(user.token)],
    ['GET /v1/user-api-keys (access token: membership + key status)', () => listKeys(accessToken)],
    ['POST /v1/token', () => started.t!.http().post('/v1/token').set('Authorization', `ApiKey ${keyValue}`)],
    ['GET /readyz', () => started.t!.http().get('/readyz')],
  ];

  /** Several requests at once, so the pool holds idle connections when the outage starts. */
  const warmPool = () => Promise.all(Array.from({ length: 4 }, () => listKeys(accessToken)));

  async function printProbes(outage: string): Promise<void> {
    for (const [name, request] of probes) {
      const at = performance.now();
      const response = await request();
      console.log(`[${outage}] ${name}: ${response.status} in ${Math.round(performance.now() - at)} ms`);
    }
  }

  async function printRecovery(outage: string): Promise<void> {
    const at = performance.now();
    let last: Response | undefined;
    let attempts = 0;
    while (performance.now() - at < 10_000) {
      attempts += 1;
      last = await listKeys(user.token);
      if (last.status === 200) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    console.log(
      `[${outage}] recovered after ${Math.round(performance.now() - at)} ms (${attempts} attempts, last status ${last?.status})`,
    );
  }

  it('PostgreSQL refuses connections', async () => {
    await warmPool();
    await started.proxy!.refuse();
    await printProbes('refused');
    await started.proxy!.restore();
    await printRecovery('refused');
  }, 60_000);

  it('PostgreSQL is silent (black hole)', async () => {
    await warmPool();
    started.proxy!.blackhole();
    await printProbes('black hole');
    await printProbes('black hole, again');
    await started.proxy!.restore();
    await printRecovery('black hole');
  }, 60_000);
});
