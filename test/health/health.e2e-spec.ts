import { ShutdownState } from '../../src/common/shutdown.state';
import { createTestApp, TestApp } from '../support/test-app';

/** GET /healthz and GET /readyz (docs/operations.md), and how they behave while draining. */
describe('health probes', () => {
  let t: TestApp;
  beforeEach(async () => {
    t = await createTestApp();
  });
  afterEach(() => t.close());

  it('GET /healthz: 200 {"status":"ok"} without authentication, never cached', async () => {
    const response = await t.http().get('/healthz');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-cache, no-store, must-revalidate');
    expect(response.body).toEqual({ status: 'ok' });
  });

  it("GET /readyz: 200 with terminus' result when the database answers, without authentication", async () => {
    const response = await t.http().get('/readyz');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-cache, no-store, must-revalidate');
    const database = { status: 'up', responseTime: expect.any(Number) };
    expect(response.body).toEqual({ status: 'ok', info: { database }, error: {}, details: { database } });
  });

  it('ignores a Bearer header, even an invalid one (the probes are public)', async () => {
    await t.http().get('/healthz').set('Authorization', 'Bearer not-a-token').expect(200);
    await t.http().get('/readyz').set('Authorization', 'Bearer not-a-token').expect(200);
  });

  it('while draining: /readyz and new work answer 503 UNAVAILABLE with Connection: close, /healthz stays 200', async () => {
    const user = await t.user();
    await t.http().get('/v1/user-api-keys').set('Authorization', `Bearer ${user.token}`).expect(200);

    t.get(ShutdownState).begin();

    const unavailable = { code: 'UNAVAILABLE', message: 'service unavailable', reason: 'shutting_down' };
    const ready = await t.http().get('/readyz');
    expect(ready.status).toBe(503);
    expect(ready.body).toEqual(unavailable);
    expect(ready.headers.connection).toBe('close');
    const work = await t.http().get('/v1/user-api-keys').set('Authorization', `Bearer ${user.token}`);
    expect(work.status).toBe(503);
    expect(work.body).toEqual(unavailable);
    expect(work.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(work.headers['x-request-id']).toEqual(expect.any(String));
    // Refused before the body is read: not even a malformed body gets a 400.
    const post = await t.http().post('/v1/token').set('Content-Type', 'application/json').send('{');
    expect(post.status).toBe(503);
    expect(post.body).toEqual(unavailable);
    const alive = await t.http().get('/healthz');
    expect(alive.status).toBe(200);
    expect(alive.body).toEqual({ status: 'ok' });
  });
});
