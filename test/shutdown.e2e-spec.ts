import { ChildProcess, spawn } from 'node:child_process';
import { generateKeyPairSync, randomBytes } from 'node:crypto';
import { request as httpRequest } from 'node:http';
import { connect, createServer, Socket } from 'node:net';
import { join } from 'node:path';
import { TEST_BUILD_DIR_VARIABLE } from '../src/common/batching-thread';
import type { Environment } from '../src/config/configuration';
import { createTestApp, createTestDatabase, TestDatabase, TestUser } from './support/test-app';

/**
 * SIGTERM (docs/operations.md): stop taking new work, finish what is in flight, flush pending
 * last_used_at writes, exit 0, and never take longer than SHUTDOWN_TIMEOUT_MS. This needs a real
 * process: the server compiled by Jest's global setup (test/support/global-setup.ts, as `npm run
 * build` compiles it) runs as `node main.js` on the suite's database, finding its compiled signing
 * worker beside itself as in production.
 *
 * No timing is asserted (docs/performance.md): the time to exit is printed for the report; the
 * Jest timeouts only bound a hung run.
 */
/** Secrets for the child and the in-process apps that share its database (same JWT key). */
const secrets: Environment = {
  API_KEY_PEPPER: randomBytes(32).toString('base64'),
  JWT_PRIVATE_KEY: generateKeyPairSync('ec', { namedCurve: 'P-256' })
    .privateKey.export({ type: 'pkcs8', format: 'pem' })
    .toString(),
  INTEGRATIONS_ENCRYPTION_KEY: randomBytes(32).toString('base64'),
};

interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON, as supertest's `body`. */
  body: ReturnType<typeof JSON.parse>;
}

/** One request on a fresh connection (no keep-alive agent). */
function send(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string) {
  return new Promise<HttpResult>((resolvePromise, reject) => {
    const req = httpRequest({ host: '127.0.0.1', port, method, path, headers, agent: false }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (text += chunk));
      res.on('end', () =>
        resolvePromise({
          status: res.statusCode ?? 0,
          headers: res.headers,
          body: text === '' ? null : JSON.parse(text),
        }),
      );
    });
    req.on('error', reject);
    req.end(body);
  });
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  const port = (server.address() as { port: number }).port;
  await new Promise<void>((ok) => server.close(() => ok()));
  return port;
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** The server as a child process, with its output kept for failure messages. */
class ServerProcess {
  output = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;

  private constructor(
    readonly child: ChildProcess,
    readonly port: number,
  ) {
    child.stdout!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    child.stderr!.on('data', (chunk: Buffer) => (this.output += chunk.toString()));
    this.exited = new Promise((ok) => child.once('exit', (code, signal) => ok({ code, signal })));
  }

  static async start(mainJs: string, database: TestDatabase, env: Environment): Promise<ServerProcess> {
    const port = await freePort();
    const child = spawn(process.execPath, [mainJs], {
      cwd: database.env.DATA_DIR, // no stray .env file
      env: {
        PATH: process.env.PATH,
        ...secrets,
        ...database.env,
        HOST: '127.0.0.1',
        PORT: String(port),
        LOG_LEVEL: 'info',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const server = new ServerProcess(child, port);
    const deadline = Date.now() + 30_000;
    for (;;) {
      if (child.exitCode !== null) throw new Error(`server exited at start:\n${server.output}`);
      try {
        if ((await send(port, 'GET', '/healthz')).status === 200) return server;
      } catch {
        // not listening yet
      }
      if (Date.now() > deadline) throw new Error(`server did not start:\n${server.output}`);
      await sleep(100);
    }
  }

  /** Sends request headers and the first part of a body now; `finish()` sends the rest later. */
  async startSlowRequest(method: string, path: string, headers: Record<string, string>, body: string) {
    const socket: Socket = connect(this.port, '127.0.0.1');
    await new Promise<void>((ok, reject) => socket.once('connect', ok).once('error', reject));
    let raw = '';
    socket.setEncoding('utf8');
    socket.on('data', (chunk: string) => (raw += chunk));
    const closed = new Promise<void>((ok) => socket.once('close', () => ok()));
    const head = Object.entries({ Host: `127.0.0.1:${this.port}`, 'Content-Length': String(body.length), ...headers })
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('');
    const half = Math.floor(body.length / 2);
    socket.write(`${method} ${path} HTTP/1.1\r\n${head}\r\n${body.slice(0, half)}`);
    return {
      /** Sends the rest of the body and waits for the server to answer and close the connection. */
      finish: async (): Promise<HttpResult & { raw: string }> => {
        socket.write(body.slice(half));
        await closed;
        const [head = '', text = ''] = raw.split('\r\n\r\n');
        const [statusLine, ...lines] = head.split('\r\n');
        const headersOut: Record<string, string> = {};
        for (const line of lines) {
          const colon = line.indexOf(':');
          headersOut[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
        }
        return { status: Number(statusLine.split(' ')[1]), headers: headersOut, body: JSON.parse(text || 'null'), raw };
      },
      abandon: () => socket.destroy(),
    };
  }
}

describe('graceful shutdown (the built server as a child process)', () => {
  let buildDir: string;
  let database: TestDatabase;
  let user: TestUser;
  let server: ServerProcess | undefined;

  beforeAll(async () => {
    buildDir = process.env[TEST_BUILD_DIR_VARIABLE]!;
    database = createTestDatabase();
    // The user and its session token, made in-process on the database the child will use.
    const setup = await createTestApp({ database, env: secrets });
    user = await setup.user();
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

  it('on SIGTERM: turns not-ready, finishes the in-flight request, flushes last_used_at, exits 0', async () => {
    // A long flush interval: only the flush at shutdown can write last_used_at.
    server = await ServerProcess.start(join(buildDir, 'main.js'), database, { API_KEY_LAST_USED_FLUSH_MS: '60000' });
    const port = server.port;
    const created = await send(
      port,
      'POST',
      '/v1/user-api-keys',
      { ...auth(), 'Content-Type': 'application/json' },
      '{}',
    );
    expect(created.status).toBe(201);
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
    await sleep(200);

    const signalledAt = performance.now();
    server.child.kill('SIGTERM');

    // Right after: not ready. Either the port is closed already (refused; or reset, for a connection
    // the kernel accepted just before the listener closed) or it answers 503.
    let readiness: string | undefined;
    for (let attempt = 0; attempt < 50 && readiness === undefined; attempt += 1) {
      try {
        const ready = await send(port, 'GET', '/readyz');
        if (ready.status !== 200) readiness = `${ready.status} ${JSON.stringify(ready.body)}`;
      } catch (error) {
        readiness = (error as NodeJS.ErrnoException).code;
      }
      if (readiness === undefined) await sleep(20);
    }
    console.log(`readiness after SIGTERM: ${readiness} (${Math.round(performance.now() - signalledAt)} ms)`);
    expect(['ECONNREFUSED', 'ECONNRESET', '503 {"code":"UNAVAILABLE","message":"service unavailable"}']).toContain(
      readiness,
    );
    expect(server.child.exitCode).toBeNull(); // still draining: the request is in flight

    const finished = await inFlight.finish();
    expect(finished.status).toBe(201);
    expect(finished.body.api_key).toEqual(expect.objectContaining({ label: 'in-flight', status: 'ACTIVE' }));
    expect(finished.headers.connection).toBe('close');

    const exit = await server.exited;
    console.log(`exited ${JSON.stringify(exit)} ${Math.round(performance.now() - signalledAt)} ms after SIGTERM`);
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
    const signalledAt = performance.now();
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    console.log(`idle: exited ${JSON.stringify(exit)} ${Math.round(performance.now() - signalledAt)} ms after SIGTERM`);
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
    await sleep(200);
    const signalledAt = performance.now();
    server.child.kill('SIGTERM');
    const exit = await server.exited;
    console.log(
      `stuck: exited ${JSON.stringify(exit)} ${Math.round(performance.now() - signalledAt)} ms after SIGTERM`,
    );
    expect(exit).toEqual({ code: 1, signal: null });
    expect(server.output).toContain('shutdown timed out');
    stuck.abandon();
  }, 60_000);
});
