import { INestApplication, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppError, ErrorCode, Messages } from './errors';
import { sendError } from './exception.filter';
import { activeTracing } from './tracing';

/** Liveness stays 200 while the process drains (it is alive); everything else is new work. */
const ALWAYS_ANSWERED = new Set(['/healthz']);

/** Grace for a connection's first request after the listener closes (docs/operations.md#graceful-shutdown). */
export const FIRST_REQUEST_GRACE_MS = 1000;

/** The response a connection is serving now (the later one, if a client pipelines). */
const SERVING = Symbol('serving');
type ServingSocket = Socket & { [SERVING]?: Response };

/**
 * On SIGTERM: stop taking new work, finish what is in flight, exit (docs/operations.md).
 *
 * What is in flight is a mark on each connection, not a set of responses: a set that every request adds to and
 * removes from keeps replacing its table, and each table it drops still points at the responses of that moment, so
 * the young-generation collector kept every request it could reach from them and promoted it (2.5 MB promoted a
 * scavenge under load, against 3 KB without; measured 2026-11, `git log -p -- docs/performance.md`).
 */
@Injectable()
export class ShutdownState implements OnModuleDestroy {
  private draining = false;
  private readonly drain = new AbortController();
  /** Connections that have carried a request, until they close (they change per connection, not per request). */
  private readonly connections = new Set<ServingSocket>();
  private serving = 0;

  get isDraining(): boolean {
    return this.draining;
  }

  get inFlightCount(): number {
    return this.serving;
  }

  /** Aborted when the drain begins: work that waits (a long poll) answers now instead of holding the shutdown. */
  get drainSignal(): AbortSignal {
    return this.drain.signal;
  }

  begin(): void {
    if (this.draining) return;
    this.draining = true;
    this.drain.abort();
    // Without this, a keep-alive connection stays open after its in-flight response until the
    // keep-alive timeout, holding server.close() (and the exit) for seconds.
    for (const socket of this.connections) {
      const response = socket[SERVING];
      if (response !== undefined && !response.headersSent) response.setHeader('Connection', 'close');
    }
  }

  /** app.close() without a signal (tests, the CLI): destroy hooks run before the server closes. */
  onModuleDestroy(): void {
    this.begin();
  }

  busyConnections(): Set<Socket> {
    return new Set([...this.connections].filter((socket) => socket[SERVING] !== undefined));
  }

  /** Express middleware, installed before the body parser (configureHttp). */
  readonly gate = (req: Request, res: Response, next: NextFunction): void => {
    if (this.draining && !ALWAYS_ANSWERED.has(req.path)) {
      // Before the body is read: Node reads and discards it before it closes the connection.
      res.setHeader('Connection', 'close');
      sendError(res, new AppError(ErrorCode.UNAVAILABLE, Messages.unavailable));
      return;
    }
    if (this.draining) res.setHeader('Connection', 'close');
    const socket: ServingSocket = req.socket;
    if (!this.connections.has(socket)) {
      this.connections.add(socket);
      socket.once('close', () => this.connections.delete(socket));
    }
    socket[SERVING] = res;
    this.serving += 1;
    res.once('close', () => {
      this.serving -= 1;
      if (socket[SERVING] === res) socket[SERVING] = undefined;
    });
    next();
  };
}

/** The HTTP server's open connections, for the close at shutdown (docs/operations.md#graceful-shutdown). */
export class HttpConnections {
  private readonly open = new Set<Socket>();

  constructor(private readonly server: Server) {
    server.on('connection', (socket: Socket) => {
      this.open.add(socket);
      socket.once('close', () => this.open.delete(socket));
    });
  }

  get count(): number {
    return this.open.size;
  }

  /** Stops listening; connections close as they go idle, unused ones after FIRST_REQUEST_GRACE_MS. */
  close(state: ShutdownState): Promise<void> {
    return new Promise((resolve) => {
      const grace = setTimeout(() => this.closeUnused(state), FIRST_REQUEST_GRACE_MS);
      this.server.close(() => {
        clearTimeout(grace);
        resolve();
      });
    });
  }

  private closeUnused(state: ShutdownState): void {
    const busy = state.busyConnections();
    for (const socket of this.open) {
      // Nothing written: no response yet, so no request carried (a keep-alive one would be closed already).
      if (socket.bytesWritten === 0 && !busy.has(socket)) socket.destroy();
    }
  }
}

export interface ShutdownOptions {
  /** SHUTDOWN_DRAIN_MS: how long the instance keeps listening, answering new work 503, after the signal. */
  drainMs: number;
  /** SHUTDOWN_TIMEOUT_MS: the longest the whole shutdown may take, drain included. */
  timeoutMs: number;
}

/**
 * SIGTERM / SIGINT: answer 503 while still listening for `drainMs` so load balancers stop sending here before the port
 * closes, then finish in-flight work and close (docs/operations.md#graceful-shutdown).
 */
export function exitGracefullyOnSignals(
  app: INestApplication,
  connections: HttpConnections,
  { drainMs, timeoutMs }: ShutdownOptions,
): void {
  const logger = new Logger('Shutdown');
  const state = app.get(ShutdownState);
  let startedAt: number | undefined;
  const elapsedMs = (): number => Date.now() - startedAt!;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (startedAt !== undefined) {
      logger.error({ signal }, 'second signal during shutdown; exiting now');
      process.exit(1);
    }
    startedAt = Date.now();
    state.begin();
    logger.log({ signal, drainMs, timeoutMs }, 'shutting down: not ready, answering new requests 503');
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs, inFlight: state.inFlightCount }, 'shutdown timed out; exiting');
      process.exit(1);
    }, timeoutMs);
    deadline.unref();
    sleep(drainMs)
      .then(() => {
        logger.log(
          { elapsedMs: elapsedMs(), inFlight: state.inFlightCount, connections: connections.count },
          'stopped listening; finishing in-flight requests',
        );
        return connections.close(state);
      })
      .then(() => app.close())
      // The last spans (the requests of the drain) are exported before the exit.
      .then(() => activeTracing()?.shutdown())
      .then(
        () => {
          logger.log({ elapsedMs: elapsedMs() }, 'shut down');
          process.exit(0);
        },
        (error: unknown) => {
          logger.error({ err: error }, 'shutdown failed');
          process.exit(1);
        },
      );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
}
