import { connect } from 'node:net';
import { join } from 'node:path';
import { TEST_BUILD_DIR_VARIABLE } from '../support/build-directory';
import type { Environment } from '../../src/config/configuration';
import {
  HttpResult,
  lastResponse,
  openConnection,
  requestHead,
  send,
  ServerProcess,
  sigtermUnderLoad,
} from '../support/server-process';
import { ResourceServersService } from '../../src/resource-servers/resource-servers.service';
import { createTestApp, createTestDatabase, TestDatabase, testSecrets, TestUser } from '../support/test-app';
import { pause, waitFor } from '../support/wait';

/**
 * SIGTERM (docs/operations.md): stop taking new work, finish what is in flight, flush pending
 * last_used_at writes, exit 0, and never take longer than SHUTDOWN_TIMEOUT_MS. With
 * SHUTDOWN_DRAIN_MS, keep listening and answer new work 503 for that long first. Every connection
 * the process has accepted gets a full answer, never a reset, even under load. This needs a real
 * process: the server compiled by Jest's global setup (test/support/global-setup.ts, as `npm run
 * build` compiles it) runs as `node main.js` on the suite's database, finding its compiled signing
 * worker beside itself as in production.
 *
 * No time is asserted but the drain's lower bound (it listens at least SHUTDOWN_DRAIN_MS): what the process has
 * accepted and is answering is read from its gauges, the signal's handling from its log, and waiting long polls are
 * answered before the drain ends. The time to exit, and the counts of the run under load, are measured by
 * bench/timings/shutdown.bench.ts (`npm run bench:timings`); the Jest timeouts only bound a hung run.
 */
/** Secrets for the child and the in-process apps that share its database (same JWT key). */
const secrets: Environment = testSecrets;
/** The gauges (docs/operations.md#metrics) that say what the process has accepted and is answering. */
const IN_FLIGHT = 'gatehouse_http_requests_in_flight';
const OPEN_CONNECTIONS = 'gatehouse_http_connections_open';
/** Its log lines at the signal and at the drain's end (src/common/shutdown.state.ts). */
const DRAIN_STARTED = 'shutting down: not ready, answering new requests 503';
const DRAIN_ENDED = 'stopped listening; finishing in-flight requests';

describe('graceful shutdown (the built server as a child process)', () => {
  let buildDir: string;
  let database: TestDatabase;
  let user: TestUser;
  let feedAuthorization: string;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    buildDir = process.env[TEST_BUILD_DIR_VARIABLE]!;
    database = createTestDatabase();
    // The user and its session token, made in-process on the database the child will use.
    const setup = await createTestApp({ database, env: secrets });
    user = await setup.user();
    const feed = await setup.get(ResourceServersService).register('Shutdown', 'https://shutdown.example.com');
    feedAuthorization = `Basic ${Buffer.from(`${feed.clientId}:${feed.clientSecret}`).toString('base64')}`;
    await setup.close();
  }, 180_000);

  afterEach(() => {
    if (server !== undefined && server.child.exitCode === null && server.child.signalCode === null) {
      server.child.kill('SIGKILL');
    }
    server = undefined;
  });

  afterAll(async () => {
    await database?.drop();
  });

  const auth = () => ({ Authorization: `Bearer ${user.token}` });

  /** POST /v1/user-api-keys on the server process, asserting 201. */
  async function createKey(port: number): Promise<HttpResult> {
    const created = await send(
      port,
      'POST',
      '/v1/user-api-keys',
      { ...auth(), 'Content-Type': 'application/json' },
      '{}',
    );
    expect(created.status).toBe(201);
    return created;
  }

  it('on SIGTERM: turns not-ready, finishes the in-flight request, flushes last_used_at, exits 0', async () => {
    // A long flush interval: only the flush at shutdown can write last_used_at.
    server = await ServerProcess.start(join(buildDir, 'main.js'), database, { API_KEY_LAST_USED_FLUSH_MS: '60000' });
    const port = server.port;
    const created = await createKey(port);
    const exchanged = await send(port, 'POST', '/v1/token', { Authorization: `ApiKey ${created.body.opaque_key}` });
    expect(exchanged.status).toBe(200);
    expect((await send(port, 'GET', '/readyz')).status).toBe(200);

    // In flight: headers and half the body are in; the server is waiting for the rest.
    const inFlight = await server.startSlowRequest(
      'POST',
      '/v1/user-api-keys',
      { ...auth(), 'Content-Type': 'application/json' },
      JSON.stringify({ label: 'in-flight' }),
    );
    await server.untilMetric(IN_FLIGHT, 1);

    server.child.kill('SIGTERM');

    // Right after: not ready. Either the port is closed already (refused; or reset, for a connection
    // the kernel accepted just before the listener closed) or it answers 503.
    const readiness = await waitFor(
      'not ready after SIGTERM',
      async () => {
        try {
          const ready = await send(port, 'GET', '/readyz');
          return ready.status === 200 ? undefined : `${ready.status} ${JSON.stringify(ready.body)}`;
        } catch (error) {
          return (error as NodeJS.ErrnoException).code;
        }
      },
      { everyMs: 20 },
    );
    expect([
      'ECONNREFUSED',
      'ECONNRESET',
      '503 {"code":"UNAVAILABLE","message":"service unavailable","reason":"shutting_down"}',
    ]).toContain(readiness);
    expect(server.child.exitCode).toBeNull(); // still draining: the request is in flight

    const finished = await inFlight.finish();
    expect(finished.status).toBe(201);
    expect(finished.body.api_key).toEqual(expect.objectContaining({ label: 'in-flight', status: 'ACTIVE' }));
    expect(finished.headers.connection).toBe('close');

    const exit = await server.exited;
    expect(exit).toEqual({ code: 0, signal: null });

    // What the drained process left in the database: the in-flight key, and the flushed use.
    const after = await createTestApp({ database, env: secrets });
    try {
      const list = await after.http().get('/v1/user-api-keys').set(auth()).expect(200);
      expect(list.body.api_keys.map((key: { label: string }) => key.label)).toContain('in-flight');
      const used = list.body.api_keys.find((key: { id: string }) => key.id === created.body.api_key.id);
      expect(used.last_used_at).toEqual(expect.stringMatching(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/));
    } finally {
      await after.close();
    }
  }, 60_000);

  it('exits 0 at once on SIGTERM when idle, even with an idle keep-alive connection open', async () => {
    server = await ServerProcess.start(join(buildDir, 'main.js'), database, {});
    const socket = connect(server.port, '127.0.0.1');
    await new Promise<void>((ok) => socket.once('connect', ok));
    socket.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n`);
    await new Promise((ok) => socket.once('data', ok));
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    socket.destroy();
  }, 60_000);

  it('exits 1 after SHUTDOWN_TIMEOUT_MS when a request never finishes', async () => {
    server = await ServerProcess.start(join(buildDir, 'main.js'), database, { SHUTDOWN_TIMEOUT_MS: '1000' });
    const stuck = await server.startSlowRequest(
      'POST',
      '/v1/user-api-keys',
      { ...auth(), 'Content-Type': 'application/json' },
      JSON.stringify({ label: 'never-finished' }),
    );
    await server.untilMetric(IN_FLIGHT, 1);
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    expect(exit).toEqual({ code: 1, signal: null });
    expect(server.output).toContain('shutdown timed out');
    stuck.abandon();
  }, 60_000);

  it("answers the revocation feed's waiting long polls at the signal, before the drain ends, and exits 0", async () => {
    const drainMs = 2000;
    server = await ServerProcess.start(join(buildDir, 'main.js'), database, {
      SHUTDOWN_DRAIN_MS: String(drainMs),
      SSF_POLL_WAIT_SECONDS: '30',
    });
    const port = server.port;
    const poll = JSON.stringify({ returnImmediately: false });
    const feed = { Authorization: feedAuthorization, 'Content-Type': 'application/json' };
    // Drain what is pending, then two long polls that wait (nothing new comes).
    expect((await send(port, 'POST', '/ssf/poll', feed, JSON.stringify({ returnImmediately: true }))).status).toBe(200);
    /** For each poll answered: whether the server had logged the drain's end by then. */
    const drainEndedAtAnswer: boolean[] = [];
    const waiting = [0, 1].map(() =>
      send(port, 'POST', '/ssf/poll', feed, poll).then((answer) => {
        drainEndedAtAnswer.push(server!.output.includes(DRAIN_ENDED));
        return answer;
      }),
    );
    // Both wait at the server, unanswered.
    await server.untilMetric(IN_FLIGHT, 2);
    expect(drainEndedAtAnswer).toEqual([]);

    server.child.kill('SIGTERM');
    for (const answer of await Promise.all(waiting)) {
      expect(answer).toMatchObject({ status: 200, body: { sets: {}, moreAvailable: false } });
      expect(answer.headers.connection).toBe('close');
    }
    // At the signal, not after the drain: the server was still draining when they came.
    expect(drainEndedAtAnswer).toEqual([false, false]);
    const exit = await server.exited;
    expect(exit).toEqual({ code: 0, signal: null });
    expect(server.output).toContain(DRAIN_ENDED);
    expect(server.output).not.toContain('shutdown timed out');
  }, 60_000);

  const unavailable = { code: 'UNAVAILABLE', message: 'service unavailable', reason: 'shutting_down' };

  /**
   * New connections to GET /readyz every 20 ms until one fails (the listener is closed): the
   * answers seen until then and the error code of that connection.
   */
  async function probeUntilClosed(port: number): Promise<{ answers: string[]; error: string | undefined }> {
    const answers: string[] = [];
    for (let attempt = 0; attempt < 500; attempt += 1) {
      try {
        const ready = await send(port, 'GET', '/readyz');
        answers.push(`${ready.status} ${JSON.stringify(ready.body)} ${String(ready.headers.connection)}`);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code;
        // A probe that reached the kernel's accept queue as the listener closed is reset, never
        // accepted by the process: it raced the close, so probe again until refused.
        if (code === 'ECONNRESET') continue;
        return { answers, error: code };
      }
      await pause(20);
    }
    return { answers, error: undefined };
  }

  it('SHUTDOWN_DRAIN_MS: listens and answers 503 for the drain, answers every connection it accepted, then stops listening and finishes in-flight work', async () => {
    const drainMs = 2000;
    server = await ServerProcess.start(join(buildDir, 'main.js'), database, { SHUTDOWN_DRAIN_MS: String(drainMs) });
    const port = server.port;
    const json = { ...auth(), 'Content-Type': 'application/json' };
    // Accepted before SIGTERM: a request in flight (half its body in), a connection that has sent
    // nothing yet, and an idle keep-alive connection.
    const inFlight = await server.startSlowRequest('POST', '/v1/user-api-keys', json, '{"label":"across-the-drain"}');
    const fresh = await openConnection(port);
    const keepAlive = await openConnection(port);
    keepAlive.write(requestHead(port, 'GET', '/healthz', {}));
    await waitFor('the keep-alive answered', () => keepAlive.received().endsWith('{"status":"ok"}')).catch(
      () => undefined,
    );
    expect(lastResponse(keepAlive.received())).toMatchObject({ status: 200, body: { status: 'ok' } });
    // All three accepted by the process; only the slow request is being answered (the keep-alive one is idle).
    await server.untilMetric(OPEN_CONNECTIONS, 3);
    await server.untilMetric(IN_FLIGHT, 1);

    const signalledAt = performance.now();
    server.child.kill('SIGTERM');
    await server.untilLogged(DRAIN_STARTED);

    // Still listening: a new connection is answered, 503 and not ready.
    const ready = await send(port, 'GET', '/readyz');
    expect(ready).toMatchObject({ status: 503, body: unavailable, headers: { connection: 'close' } });

    // The connection that had sent nothing sends a request now, with only part of its body: the
    // 503 comes at once, before the rest, and the server closes the connection (no error).
    const body = '{"label":"during-the-drain"}';
    fresh.write(requestHead(port, 'POST', '/v1/user-api-keys', { ...json, 'Content-Length': String(body.length) }));
    fresh.write(body.slice(0, 10));
    const freshEnd = await fresh.closed();
    expect(freshEnd.error).toBeUndefined();
    expect(lastResponse(freshEnd.raw)).toMatchObject({
      status: 503,
      body: unavailable,
      headers: { connection: 'close' },
    });

    // The keep-alive connection's next request: the same.
    keepAlive.write(requestHead(port, 'GET', '/v1/user-api-keys', auth()));
    const keepAliveEnd = await keepAlive.closed();
    expect(keepAliveEnd.error).toBeUndefined();
    expect(lastResponse(keepAliveEnd.raw)).toMatchObject({
      status: 503,
      body: unavailable,
      headers: { connection: 'close' },
    });

    // After the drain the listener closes (refused), while the request in flight keeps the process.
    const probed = await probeUntilClosed(port);
    const listenedMs = Math.round(performance.now() - signalledAt);
    expect(probed.error).toBe('ECONNREFUSED');
    expect(new Set(probed.answers)).toEqual(new Set([`503 ${JSON.stringify(unavailable)} close`]));
    expect(listenedMs).toBeGreaterThanOrEqual(drainMs);
    expect(server.child.exitCode).toBeNull();

    const finished = await inFlight.finish();
    expect(finished.status).toBe(201);
    expect(finished.body.api_key).toEqual(expect.objectContaining({ label: 'across-the-drain', status: 'ACTIVE' }));
    expect(finished.headers.connection).toBe('close');
    const exit = await server.exited;
    expect(exit).toEqual({ code: 0, signal: null });
  }, 60_000);

  it('without a drain: a connection accepted before SIGTERM is answered if its request comes after the listener closed, and closed cleanly if none comes', async () => {
    server = await ServerProcess.start(join(buildDir, 'main.js'), database, { SHUTDOWN_TIMEOUT_MS: '5000' });
    const port = server.port;
    await server.untilMetric(OPEN_CONNECTIONS, 0); // the start's probes closed: what is open next is ours
    const late = await openConnection(port);
    const silent = await openConnection(port);
    await server.untilMetric(OPEN_CONNECTIONS, 2); // accepted by the process, not only by the kernel

    server.child.kill('SIGTERM');
    const probed = await probeUntilClosed(port);
    expect(probed.error).toBe('ECONNREFUSED');
    late.write(requestHead(port, 'GET', '/v1/user-api-keys', auth()));
    const lateEnd = await late.closed();
    expect(lateEnd.error).toBeUndefined();
    expect(lastResponse(lateEnd.raw)).toMatchObject({
      status: 503,
      body: unavailable,
      headers: { connection: 'close' },
    });

    // The connection that never sends a request does not hold the exit until SHUTDOWN_TIMEOUT_MS.
    const silentEnd = await silent.closed();
    expect(silentEnd).toEqual({ raw: '', error: undefined });
    const exit = await server.exited;
    expect(exit).toEqual({ code: 0, signal: null });
  }, 60_000);

  it('under load (8 clients, a new connection per request, until the balancer takes the instance out): no connection is reset', async () => {
    const drainMs = 2000;
    server = await ServerProcess.start(join(buildDir, 'main.js'), database, { SHUTDOWN_DRAIN_MS: String(drainMs) });
    const port = server.port;
    const created = await createKey(port);
    const apiKey = { Authorization: `ApiKey ${created.body.opaque_key}` };

    const { before, after, unexpected, resets, exit } = await sigtermUnderLoad(server, apiKey);
    expect(unexpected).toEqual([]);
    expect(resets).toEqual([]);
    expect(before.answered).toBeGreaterThan(0);
    expect(after.unavailable).toBeGreaterThan(0); // the drain answered new work 503 while listening
    expect(exit).toEqual({ code: 0, signal: null });
  }, 60_000);
});
