import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { TEST_BUILD_DIR_VARIABLE } from '../../test/support/build-directory';
import type { Environment } from '../../src/config/configuration';
import { openConnection, send, ServerProcess, sigtermUnderLoad } from '../../test/support/server-process';
import { createTestApp, createTestDatabase, TestDatabase, testSecrets, TestUser } from '../../test/support/test-app';

/**
 * `npm run bench:timings`: graceful shutdown (docs/operations.md#graceful-shutdown, "Measured"), the
 * built server as a child process. Prints how long after SIGTERM the process exits (one request in
 * flight, idle with a keep-alive connection, a request that never finishes, a connection that never
 * sends one), how long SHUTDOWN_DRAIN_MS keeps it listening, and the run under load. What it does
 * is asserted by test/platform/shutdown.e2e-spec.ts.
 */
describe('graceful shutdown timings (the built server as a child process)', () => {
  let mainJs: string;
  let database: TestDatabase;
  let user: TestUser;

  beforeAll(async () => {
    mainJs = join(process.env[TEST_BUILD_DIR_VARIABLE]!, 'main.js');
    database = createTestDatabase();
    const setup = await createTestApp({ database, env: testSecrets });
    user = await setup.user();
    await setup.close();
  }, 180_000);
  afterAll(() => database?.drop());

  const json = () => ({ Authorization: `Bearer ${user.token}`, 'Content-Type': 'application/json' });
  const since = (started: number): string => `${Math.round(performance.now() - started)} ms`;

  /** Starts the server, lets `prepare` open what it needs, sends SIGTERM and prints when it exited. */
  async function exitAfterSigterm(
    name: string,
    env: Environment,
    prepare: (server: ServerProcess) => Promise<() => Promise<unknown>>,
  ): Promise<void> {
    const server = await ServerProcess.start(mainJs, database, env);
    try {
      const afterSignal = await prepare(server);
      const signalledAt = performance.now();
      server.child.kill('SIGTERM');
      await afterSignal();
      const exit = await server.exited;
      console.log(`${name}: exited ${JSON.stringify(exit)} ${since(signalledAt)} after SIGTERM`);
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    }
  }

  it('one request in flight', async () => {
    await exitAfterSigterm('in flight', {}, async (server) => {
      const inFlight = await server.startSlowRequest('POST', '/v1/user-api-keys', json(), '{"label":"in-flight"}');
      await sleep(200);
      return async () => {
        await sleep(100);
        await inFlight.finish();
      };
    });
  }, 60_000);

  it('idle, with a keep-alive connection open', async () => {
    await exitAfterSigterm('idle', {}, async (server) => {
      const connection = await openConnection(server.port);
      connection.write(`GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: keep-alive\r\n\r\n`);
      while (!connection.received().endsWith('{"status":"ok"}')) await sleep(10);
      return async () => connection.closed();
    });
  }, 60_000);

  it('a request that never finishes, SHUTDOWN_TIMEOUT_MS=1000', async () => {
    await exitAfterSigterm('stuck', { SHUTDOWN_TIMEOUT_MS: '1000' }, async (server) => {
      const stuck = await server.startSlowRequest('POST', '/v1/user-api-keys', json(), '{"label":"never-finished"}');
      await sleep(200);
      return async () => {
        await server.exited;
        stuck.abandon();
      };
    });
  }, 60_000);

  it('a connection that never sends a request, SHUTDOWN_TIMEOUT_MS=5000', async () => {
    await exitAfterSigterm('silent connection', { SHUTDOWN_TIMEOUT_MS: '5000' }, async (server) => {
      const silent = await openConnection(server.port);
      await sleep(200); // accepted by the process, not only by the kernel
      return async () => silent.closed();
    });
  }, 60_000);

  it('SHUTDOWN_DRAIN_MS=2000, one request in flight across the drain', async () => {
    const server = await ServerProcess.start(mainJs, database, { SHUTDOWN_DRAIN_MS: '2000' });
    try {
      const inFlight = await server.startSlowRequest('POST', '/v1/user-api-keys', json(), '{"label":"drain"}');
      await sleep(200);
      const signalledAt = performance.now();
      server.child.kill('SIGTERM');
      let refused: string | undefined;
      while (refused === undefined) {
        await send(server.port, 'GET', '/readyz').then(
          () => sleep(20),
          (error: NodeJS.ErrnoException) => (refused = error.code ?? String(error)),
        );
      }
      console.log(`drain 2000 ms: listening until ${since(signalledAt)} after SIGTERM, then ${refused}`);
      await inFlight.finish();
      const exit = await server.exited;
      console.log(`drain: exited ${JSON.stringify(exit)} ${since(signalledAt)} after SIGTERM`);
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    }
  }, 60_000);

  it('under load: 8 clients, a new connection per request, SHUTDOWN_DRAIN_MS=2000', async () => {
    const server = await ServerProcess.start(mainJs, database, { SHUTDOWN_DRAIN_MS: '2000' });
    try {
      const created = await send(server.port, 'POST', '/v1/user-api-keys', json(), '{}');
      const run = await sigtermUnderLoad(
        server,
        { Authorization: `ApiKey ${created.body.opaque_key}` },
        { loadMs: 1000 },
      );
      const accepted = (counts: typeof run.before) => counts.answered + counts.unavailable + counts.reset;
      const total = accepted(run.before) + accepted(run.after);
      const resetCount = run.before.reset + run.after.reset;
      console.log(
        [
          'load: 8 clients, one connection per request; SHUTDOWN_DRAIN_MS=2000',
          `  before SIGTERM: ${JSON.stringify(run.before)}`,
          `  after SIGTERM:  ${JSON.stringify(run.after)}`,
          `  balancer took the instance out ${Math.round(run.removedMs)} ms after SIGTERM; exited ${JSON.stringify(run.exit)} ${Math.round(run.exitedMs)} ms after it`,
          `  reset: ${resetCount} of ${total} connections (${((100 * resetCount) / total).toFixed(2)} %), ${run.after.reset} of the ${accepted(run.after)} after SIGTERM ${JSON.stringify([...new Set(run.resets)])}`,
          `  unexpected answers: ${JSON.stringify(run.unexpected)}`,
        ].join('\n'),
      );
    } finally {
      if (server.child.exitCode === null && server.child.signalCode === null) server.child.kill('SIGKILL');
    }
  }, 60_000);
});
