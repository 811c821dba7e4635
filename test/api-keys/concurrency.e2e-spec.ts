import { apiKeyAuth, bearer, decodeJwt, expectApiKeyRejected, expectBearerRejected } from '../support/http-assertions';
import { createTestApp, TestApp } from '../support/test-app';

/** Correctness under concurrent requests (no timing is asserted, only outcomes). */
describe('concurrency', () => {
  let t: TestApp;
  beforeAll(async () => {
    // Many failed exchanges from one address on purpose: not what the failed-attempt limit is tested with.
    t = await createTestApp({ env: { TOKEN_FAILURE_LIMIT_PER_MINUTE: '100000' } });
  });
  afterAll(() => t.close());

  it('50 concurrent creations by one user make 50 distinct keys', async () => {
    const user = await t.user();
    const created = await Promise.all(Array.from({ length: 50 }, (_, i) => t.createKey(user, `c${i}`)));
    expect(new Set(created.map((k) => k.id)).size).toBe(50);
    expect(new Set(created.map((k) => k.value)).size).toBe(50);

    const listed = await t.http().get('/v1/user-api-keys?limit=100').set(bearer(user.token)).expect(200);
    expect(listed.body.total_count).toBe(50);
    expect(new Set(listed.body.api_keys.map((k: { id: string }) => k.id))).toEqual(new Set(created.map((k) => k.id)));
  });

  it('50 concurrent exchanges of one key all succeed with distinct jti', async () => {
    const user = await t.user();
    const { value } = await t.createKey(user);
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => t.http().post('/v1/token').set(apiKeyAuth(value))),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(50).fill(200));
    const jtis = responses.map((r) => decodeJwt(r.body.access_token).payload.jti);
    expect(new Set(jtis).size).toBe(50);
    await Promise.all(
      responses.map((r) => t.http().get('/v1/user-api-keys').set(bearer(r.body.access_token)).expect(200)),
    );
  });

  it('revoke racing exchanges: no exchange started after the revoke returned succeeds, no minted token survives', async () => {
    const user = await t.user();
    const { id, value } = await t.createKey(user);
    let revoked = false;
    const before: Array<Promise<{ status: number; token?: string }>> = [];
    const after: Array<Promise<{ status: number; message?: string }>> = [];

    const exchangeOnce = async () => {
      const startedAfterRevoke = revoked;
      const response = await t.http().post('/v1/token').set(apiKeyAuth(value));
      if (startedAfterRevoke) {
        expectApiKeyRejected(response, 'api key revoked');
        return { status: response.status, message: response.body.message };
      }
      expect([200, 401]).toContain(response.status);
      return { status: response.status, token: response.body.access_token };
    };

    // Exchanges in flight while the revoke runs, then more once it has returned.
    for (let i = 0; i < 20; i += 1) before.push(exchangeOnce());
    const revoke = t
      .http()
      .delete(`/v1/user-api-keys/${id}`)
      .set(bearer(user.token))
      .then((response) => {
        revoked = true;
        return response;
      });
    for (let i = 0; i < 20; i += 1) before.push(exchangeOnce());
    expect((await revoke).status).toBe(200);
    for (let i = 0; i < 20; i += 1) after.push(exchangeOnce());

    const raced = await Promise.all(before);
    const late = await Promise.all(after);
    expect(late.map((r) => r.status)).toEqual(Array(20).fill(401));

    // Whatever was minted before the revoke committed is dead now (the akid is checked on every request).
    const minted = raced.filter((r) => r.status === 200).map((r) => r.token!);
    for (const token of minted) {
      expectBearerRejected(await t.http().get('/v1/user-api-keys').set(bearer(token)));
    }
  });

  it('concurrent revokes of one key all answer 200 with the same revoked record', async () => {
    const user = await t.user();
    const { id } = await t.createKey(user);
    const responses = await Promise.all(
      Array.from({ length: 10 }, () => t.http().delete(`/v1/user-api-keys/${id}`).set(bearer(user.token))),
    );
    expect(responses.map((r) => r.status)).toEqual(Array(10).fill(200));
    for (const response of responses) expect(response.body).toStrictEqual(responses[0].body);
    expect(responses[0].body.api_key.status).toBe('REVOKED');
  });
});
