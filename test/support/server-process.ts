import { ChildProcess, spawn } from 'node:child_process';
import { request as httpRequest } from 'node:http';
import { connect, Socket } from 'node:net';
import type { Environment } from '../../src/config/configuration';
import { freePort } from './ports';
import { TestDatabase, testSecrets } from './test-app';
import { pause, waitFor } from './wait';

/** Secrets for the child and the in-process apps that share its database (same JWT key). */
const secrets: Environment = testSecrets;

export interface HttpResult {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  /** Parsed JSON, as supertest's `body`. */
  body: ReturnType<typeof JSON.parse>;
}

/** One request on a fresh connection (no keep-alive agent). */
export function send(port: number, method: string, path: string, headers: Record<string, string> = {}, body?: string) {
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

/** A raw HTTP/1.1 request head (the body, if any, is written separately). */
export function requestHead(port: number, method: string, path: string, headers: Record<string, string>): string {
  const lines = Object.entries({ Host: `127.0.0.1:${port}`, ...headers }).map(
    ([name, value]) => `${name}: ${value}\r\n`,
  );
  return `${method} ${path} HTTP/1.1\r\n${lines.join('')}\r\n`;
}

/** The last response in `raw` (what a connection received), as `send` returns it. */
export function lastResponse(raw: string): HttpResult {
  const [head = '', text = ''] = raw.slice(Math.max(0, raw.lastIndexOf('HTTP/1.1 '))).split('\r\n\r\n');
  const [statusLine, ...lines] = head.split('\r\n');
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    headers[line.slice(0, colon).toLowerCase()] = line.slice(colon + 1).trim();
  }
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(text || 'null') };
}

/** A connection opened now; what is written on it, and when, is up to the test. */
export async function openConnection(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  await new Promise<void>((ok, reject) => socket.once('connect', ok).once('error', reject));
  let raw = '';
  let error: string | undefined;
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (raw += chunk));
  socket.on('error', (failure: NodeJS.ErrnoException) => (error ??= failure.code ?? failure.message));
  const closed = new Promise<void>((ok) => socket.once('close', () => ok()));
  return {
    write: (text: string) => void socket.write(text),
    received: () => raw,
    /** Everything the server sent until the connection closed, and the error the client saw, if any. */
    closed: async (): Promise<{ raw: string; error: string | undefined }> => {
      await closed;
      return { raw, error };
    },
    destroy: () => socket.destroy(),
  };
}

/** The server as a child process, with its output kept for failure messages. */
export class ServerProcess {
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
        // A free port: the default 9464 may be taken by another suite's server or a run beside this one.
        METRICS_PORT: '0',
        LOG_LEVEL: 'info',
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const server = new ServerProcess(child, port);
    try {
      await waitFor(
        'the server answering /healthz',
        async () => {
          if (child.exitCode !== null) throw new Error(`server exited at start:\n${server.output}`);
          return (await send(port, 'GET', '/healthz').catch(() => undefined))?.status === 200; // not listening yet
        },
        { timeoutMs: 30_000, everyMs: 100 },
      );
    } catch (error) {
      // Not left running after a failed start.
      if (child.exitCode === null) child.kill('SIGKILL');
      await server.exited;
      throw new Error(`${(error as Error).message}\n${server.output}`, { cause: error });
    }
    return server;
  }

  /**
   * A gauge or counter of the process's /metrics (its listener on the port it logged: METRICS_PORT=0), or undefined
   * when the scrape does not have it.
   */
  async metric(name: string): Promise<number | undefined> {
    const listening = /"port":(\d+)[^\n]*"msg":"metrics listening"/.exec(this.output);
    if (listening === null) throw new Error(`the server logged no metrics port:\n${this.output}`);
    const scrape = await fetch(`http://127.0.0.1:${listening[1]}/metrics`).then((response) => response.text());
    const line = new RegExp(`^${name} (\\S+)$`, 'm').exec(scrape);
    return line === null ? undefined : Number(line[1]);
  }

  /** Waits until the gauge `name` reads `value`: what the process has accepted and is answering, seen from outside. */
  async untilMetric(name: string, value: number): Promise<void> {
    let last: number | undefined;
    await waitFor(`${name} at ${value}`, async () => (last = await this.metric(name)) === value || undefined, {
      timeoutMs: 20_000,
      everyMs: 20,
    }).catch((error: Error) => {
      throw new Error(`${error.message} (last: ${last})\n${this.output}`, { cause: error });
    });
  }

  /** Waits until the process has logged `text` (its log lines come on stdout, LOG_LEVEL=info). */
  async untilLogged(text: string): Promise<void> {
    await waitFor(`the server logging "${text}"`, () => this.output.includes(text), { timeoutMs: 20_000 });
  }

  /** Sends request headers and the first part of a body now; `finish()` sends the rest later. */
  async startSlowRequest(method: string, path: string, headers: Record<string, string>, body: string) {
    const connection = await openConnection(this.port);
    const half = Math.floor(body.length / 2);
    connection.write(
      requestHead(this.port, method, path, { 'Content-Length': String(body.length), ...headers }) + body.slice(0, half),
    );
    return {
      /** Sends the rest of the body and waits for the server to answer and close the connection. */
      finish: async (): Promise<HttpResult & { raw: string }> => {
        connection.write(body.slice(half));
        const { raw } = await connection.closed();
        return { ...lastResponse(raw), raw };
      },
      abandon: () => connection.destroy(),
    };
  }
}

export type Outcome = 'answered' | 'unavailable' | 'refused' | 'reset';

/** What {@link sigtermUnderLoad} saw, each outcome counted by when it arrived: before or after SIGTERM. */
export interface LoadRun {
  before: Record<Outcome, number>;
  after: Record<Outcome, number>;
  /** Answers that were neither a token nor the drain's 503 with `Connection: close`. */
  unexpected: string[];
  /** The error codes of the connections reset. */
  resets: string[];
  exit: { code: number | null; signal: NodeJS.Signals | null };
  /** When the balancer took the instance out, and when the process exited, in ms after SIGTERM. */
  removedMs: number;
  exitedMs: number;
}

/**
 * SIGTERM under load: `clients` clients each open a new connection per token exchange (with
 * `apiKey`), in a loop, while a balancer routes to the instance; the balancer probes GET /readyz every
 * 100 ms and takes the instance out after two failures in a row (as Kubernetes does with
 * periodSeconds and failureThreshold: 2). SIGTERM comes once the clients have had 4 answers each on average, or after
 * `loadMs` of load.
 */
export async function sigtermUnderLoad(
  server: ServerProcess,
  apiKey: Record<string, string>,
  { clients = 8, loadMs }: { clients?: number; loadMs?: number } = {},
): Promise<LoadRun> {
  const port = server.port;
  const counts = {
    before: { answered: 0, unavailable: 0, refused: 0, reset: 0 } as Record<Outcome, number>,
    after: { answered: 0, unavailable: 0, refused: 0, reset: 0 } as Record<Outcome, number>,
  };
  const unexpected: string[] = [];
  const resets: string[] = [];
  let signalled = false;
  let routing = true; // whether the balancer still sends work to this instance
  let removedAt: number | undefined;

  // Each outcome is counted by when it arrives: before or after the signal.
  const phase = () => (signalled ? counts.after : counts.before);
  // A client: one new connection per token exchange, in a loop, while the balancer routes here.
  const client = async (): Promise<void> => {
    while (routing) {
      try {
        const answer = await send(port, 'POST', '/v1/token', apiKey);
        if (answer.status === 200 && typeof answer.body?.access_token === 'string') phase().answered += 1;
        else if (answer.status === 503 && answer.headers.connection === 'close' && answer.body?.code === 'UNAVAILABLE')
          phase().unavailable += 1;
        else unexpected.push(`${answer.status} ${JSON.stringify(answer.body)}`);
      } catch (error) {
        const code = (error as NodeJS.ErrnoException).code ?? String(error);
        if (code === 'ECONNREFUSED') {
          phase().refused += 1;
          await pause(10); // a balancer would retry elsewhere; do not spin
        } else {
          phase().reset += 1;
          resets.push(code);
        }
      }
    }
  };
  // The balancer: a readiness probe every 100 ms; after two failures in a row it takes the
  // instance out (as Kubernetes does with periodSeconds and failureThreshold: 2).
  const balancer = async (): Promise<void> => {
    let failures = 0;
    while (failures < 2) {
      await pause(100);
      const ready = await send(port, 'GET', '/readyz').then(
        (answer) => answer.status === 200,
        () => false,
      );
      failures = ready ? 0 : failures + 1;
    }
    routing = false;
    removedAt = performance.now();
  };

  const running = [balancer(), ...Array.from({ length: clients }, client)];
  if (loadMs !== undefined) {
    await pause(loadMs); // a benchmark's fixed length of load, for figures comparable between runs
  } else {
    await waitFor('the load answered before the signal', () => counts.before.answered >= 4 * clients, {
      timeoutMs: 30_000,
    });
  }
  const signalledAt = performance.now();
  signalled = true;
  server.child.kill('SIGTERM');
  await Promise.all(running);
  const exit = await server.exited;
  const exitedMs = performance.now() - signalledAt;

  return {
    ...counts,
    unexpected,
    resets,
    exit,
    removedMs: removedAt! - signalledAt,
    exitedMs,
  };
}
