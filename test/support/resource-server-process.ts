import { ChildProcess, spawn } from 'node:child_process';
import { Agent, request as httpRequest } from 'node:http';
import { join } from 'node:path';
import { TEST_BUILD_DIR_VARIABLE } from './build-directory';
import type { VerifiedAccess } from '../../verifier/src/index';
import { pause, waitFor } from './wait';

/** What test/support/resource-server.worker.ts is started with. */
export interface ResourceServerOptions {
  issuer: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  maxStalenessSeconds: number;
  /** `host:port` to connect to for the issuer's URLs (a TcpProxy); the issuer stays the one Gatehouse publishes. */
  via?: string;
}

/** What a resource server's client saw for GET /check: the status, and the refusal's code or the access. */
export interface CheckResult {
  status: number;
  /** The refusal's code (`revoked`, `invalid_token`, `insufficient_scope`, `feed_stale`); undefined on 200. */
  code?: string;
  access?: VerifiedAccess;
  headers: Record<string, string | string[] | undefined>;
}

/** `200`, or the status and the code: `401 revoked`, `503 feed_stale`… */
export const outcome = (result: CheckResult): string =>
  result.status === 200 ? '200' : `${result.status} ${result.code ?? ''}`.trim();

const START_TIMEOUT_MS = 20_000;
const CHECK_TIMEOUT_MS = 5_000;
/** Started and not yet exited. */
const live = new Set<ResourceServerProcess>();

/**
 * A resource server using the verifier, as a child process (the worker compiled by global-setup): started, asked,
 * killed (SIGKILL, a crash) and started again with the same credentials. Every process started is killed by
 * {@link ResourceServerProcess.killAll}, which suites call in afterEach/afterAll, whatever failed; and a child whose
 * parent is gone (Jest killed) exits by itself when its IPC channel closes.
 */
export class ResourceServerProcess {
  output = '';
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
  /** The port, once it listens. */
  port = 0;
  /** How long createVerifier took in the child (discovery, stream, first poll). */
  startMs = 0;
  private readonly agent = new Agent({ keepAlive: true, maxSockets: 8 });

  private constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly options: ResourceServerOptions,
  ) {
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => (this.output += chunk));
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => (this.output += chunk));
    this.exited = new Promise((resolve) =>
      child.once('exit', (code, signal) => {
        live.delete(this);
        this.agent.destroy();
        resolve({ code, signal });
      }),
    );
  }

  /** Starts one and resolves once its verifier has started and it listens (its first request is answered at once). */
  static async start(name: string, options: ResourceServerOptions): Promise<ResourceServerProcess> {
    const buildDir = process.env[TEST_BUILD_DIR_VARIABLE];
    if (buildDir === undefined) throw new Error(`${TEST_BUILD_DIR_VARIABLE} is not set: run through Jest`);
    const child = spawn(process.execPath, [join(buildDir, 'test-support', 'resource-server.worker.js')], {
      env: {
        PATH: process.env.PATH,
        GATEHOUSE_ISSUER: options.issuer,
        GATEHOUSE_AUDIENCE: options.audience,
        GATEHOUSE_CLIENT_ID: options.clientId,
        GATEHOUSE_CLIENT_SECRET: options.clientSecret,
        GATEHOUSE_MAX_STALENESS_SECONDS: String(options.maxStalenessSeconds),
        ...(options.via === undefined ? {} : { GATEHOUSE_VIA: options.via }),
      },
      // The IPC channel only tells the child when this process is gone.
      stdio: ['ignore', 'pipe', 'pipe', 'ipc'],
    });
    const server = new ResourceServerProcess(name, child, options);
    live.add(server);
    const listening = await waitFor(
      `resource server ${name} listening`,
      () => {
        if (child.exitCode !== null || child.signalCode !== null) {
          throw new Error(`resource server ${name} exited at start:\n${server.output}`);
        }
        return /^listening (\{.*\})$/m.exec(server.output);
      },
      { timeoutMs: START_TIMEOUT_MS },
    ).catch(async (error: Error) => {
      await server.kill();
      throw new Error(`${error.message}:\n${server.output}`, { cause: error });
    });
    ({ port: server.port, startMs: server.startMs } = JSON.parse(listening[1]) as { port: number; startMs: number });
    return server;
  }

  /** Kills every resource server still running (SIGKILL) and waits for them to exit. */
  static async killAll(): Promise<void> {
    await Promise.all([...live].map((server) => server.kill()));
  }

  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** SIGKILL: a crash, nothing closed, no stream deleted. */
  async kill(): Promise<void> {
    if (this.running) this.child.kill('SIGKILL');
    await this.exited;
  }

  /** Killed (SIGKILL) and started again with the same options: a new process. */
  async restart(): Promise<ResourceServerProcess> {
    await this.kill();
    return ResourceServerProcess.start(this.name, this.options);
  }

  /** GET /check with the token (and the scopes the route requires). */
  check(token: string | undefined, scopes: readonly string[] = []): Promise<CheckResult> {
    const query = scopes.map((scope) => `scope=${encodeURIComponent(scope)}`).join('&');
    const headers: Record<string, string> = token === undefined ? {} : { Authorization: `Bearer ${token}` };
    return new Promise<CheckResult>((resolve, reject) => {
      const request = httpRequest(
        {
          host: '127.0.0.1',
          port: this.port,
          path: query === '' ? '/check' : `/check?${query}`,
          headers,
          agent: this.agent,
          timeout: CHECK_TIMEOUT_MS,
        },
        (response) => {
          let text = '';
          response.setEncoding('utf8');
          response.on('data', (chunk: string) => (text += chunk));
          response.on('end', () => {
            const status = response.statusCode ?? 0;
            const body = text === '' ? null : JSON.parse(text);
            resolve(
              status === 200
                ? { status, access: body as VerifiedAccess, headers: response.headers }
                : { status, code: body?.code, headers: response.headers },
            );
          });
        },
      );
      request.on('timeout', () => request.destroy(new Error(`${this.name}: /check took over ${CHECK_TIMEOUT_MS} ms`)));
      request.on('error', (error) => reject(new Error(`${this.name}: ${error.message}\n${this.output}`)));
      request.end();
    });
  }

  /**
   * Asks every `everyMs` until the answer is `expected` (an `outcome`: '200', '401 revoked'…, or any of several), at
   * most `limitMs`. Resolves with the time it took and every distinct outcome seen on the way, in order.
   */
  async until(
    token: string,
    expected: string | readonly string[],
    {
      scopes = [],
      limitMs = 15_000,
      everyMs = 5,
    }: { scopes?: readonly string[]; limitMs?: number; everyMs?: number } = {},
  ): Promise<{ ms: number; seen: string[] }> {
    const wanted: readonly string[] = typeof expected === 'string' ? [expected] : expected;
    const start = performance.now();
    const seen: string[] = [];
    for (;;) {
      const now = outcome(await this.check(token, scopes));
      if (seen.at(-1) !== now) seen.push(now);
      if (wanted.includes(now)) return { ms: performance.now() - start, seen };
      if (performance.now() - start > limitMs) {
        throw new Error(`${this.name}: not ${wanted.join(' or ')} after ${limitMs} ms (saw ${seen.join(' -> ')})`);
      }
      await pause(everyMs);
    }
  }
}
