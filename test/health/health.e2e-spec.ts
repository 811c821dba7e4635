import { DataSource } from 'typeorm';
import { ShutdownState } from '../../src/common/shutdown.state';
import { MIGRATIONS } from '../../src/database/data-source-options';
import { MetricsServer } from '../../src/metrics/metrics.server';
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

  it('GET /readyz: 200 when the database answers, every migration is applied and the keys are loaded', async () => {
    const response = await t.http().get('/readyz');
    expect(response.status).toBe(200);
    expect(response.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(response.headers['cache-control']).toBe('no-cache, no-store, must-revalidate');
    const checks = {
      database: { status: 'up', responseTime: expect.any(Number) },
      migrations: { status: 'up', applied: MIGRATIONS.length },
      signing_keys: { status: 'up', keys: 1 },
    };
    expect(response.body).toEqual({ status: 'ok', info: checks, error: {}, details: checks });
  });

  it('GET /readyz: 503 while a migration this build knows is not applied (an older schema), ready again once it is', async () => {
    const [latest] = MIGRATIONS.slice(-1).map((migration) => migration.name);
    const dataSource = t.get(DataSource);
    const [row] = await dataSource.query<Array<{ id: number; timestamp: number }>>(
      `SELECT id, timestamp FROM migrations WHERE name = '${latest}'`,
    );
    await dataSource.query(`DELETE FROM migrations WHERE name = '${latest}'`);
    try {
      const response = await t.http().get('/readyz');
      expect(response.status).toBe(503);
      expect(response.body).toEqual({ code: 'UNAVAILABLE', message: 'service unavailable' });
    } finally {
      await dataSource.query(
        `INSERT INTO migrations (id, timestamp, name) VALUES (${row.id}, ${row.timestamp}, '${latest}')`,
      );
    }
    await t.http().get('/readyz').expect(200);
  });

  it('ignores a Bearer header, even an invalid one (the probes are public)', async () => {
    await t.http().get('/healthz').set('Authorization', 'Bearer not-a-token').expect(200);
    await t.http().get('/readyz').set('Authorization', 'Bearer not-a-token').expect(200);
  });

  it('while draining: /readyz and new work answer 503 UNAVAILABLE with Connection: close, /healthz stays 200', async () => {
    const user = await t.user();
    await t.http().get('/v1/user-api-keys').set('Authorization', `Bearer ${user.token}`).expect(200);

    t.get(ShutdownState).begin();

    const unavailable = { code: 'UNAVAILABLE', message: 'service unavailable' };
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

  it('the metrics listener answers the same probes (for a kubelet that probes the management port), not ready while draining', async () => {
    const { port } = t.get(MetricsServer).address()!;
    const probe = (path: string): Promise<globalThis.Response> => fetch(`http://127.0.0.1:${port}${path}`);
    const live = await probe('/healthz');
    expect(live.status).toBe(200);
    expect(live.headers.get('cache-control')).toBe('no-cache, no-store, must-revalidate');
    expect(await live.json()).toEqual({ status: 'ok' });
    const ready = await probe('/readyz');
    expect(ready.status).toBe(200);
    expect(await ready.json()).toMatchObject({
      status: 'ok',
      info: { database: { status: 'up' }, migrations: { status: 'up' }, signing_keys: { status: 'up' } },
    });
    expect((await probe('/readyz?x=1')).status).toBe(200);
    expect((await probe('/livez')).status).toBe(404);

    t.get(ShutdownState).begin();

    const draining = await probe('/readyz');
    expect(draining.status).toBe(503);
    expect(await draining.json()).toEqual({ code: 'UNAVAILABLE', message: 'service unavailable' });
    expect((await probe('/healthz')).status).toBe(200);
    expect((await probe('/metrics')).status).toBe(200);
  });
});
