import { INestApplication, Injectable, Logger, OnModuleDestroy } from '@nestjs/common';
import type { NextFunction, Request, Response } from 'express';
import { AppError, ErrorCode, Messages } from './errors';
import { sendError } from './exception.filter';

/** Liveness stays 200 while the process drains (it is alive); everything else is new work. */
const ALWAYS_ANSWERED = new Set(['/healthz']);

/**
 * Whether this instance is draining (docs/operations.md: on SIGTERM stop taking new work, finish
 * what is in flight, exit). Once draining, GET /readyz answers 503 and so does every request that
 * arrives afterwards (its work is refused before its body is read, `Connection: close`, so the
 * client retries on another instance), while requests already in flight run to the end.
 */
@Injectable()
export class ShutdownState implements OnModuleDestroy {
  private draining = false;
  private readonly inFlight = new Set<Response>();

  get isDraining(): boolean {
    return this.draining;
  }

  begin(): void {
    if (this.draining) return;
    this.draining = true;
    // Without this, a keep-alive connection stays open after its in-flight response until the
    // keep-alive timeout, holding server.close() (and the exit) for seconds.
    for (const response of this.inFlight) if (!response.headersSent) response.setHeader('Connection', 'close');
  }

  /** app.close() without a signal (tests, the CLI): destroy hooks run before the server closes. */
  onModuleDestroy(): void {
    this.begin();
  }

  /** Express middleware, installed before the body parser (configureHttp). */
  readonly gate = (req: Request, res: Response, next: NextFunction): void => {
    if (this.draining && !ALWAYS_ANSWERED.has(req.path)) {
      res.setHeader('Connection', 'close');
      sendError(res, new AppError(ErrorCode.UNAVAILABLE, Messages.unavailable));
      return;
    }
    if (this.draining) res.setHeader('Connection', 'close');
    this.inFlight.add(res);
    res.once('close', () => this.inFlight.delete(res));
    next();
  };
}

/**
 * SIGTERM / SIGINT: turn not-ready, let the in-flight requests finish (Nest's close() runs the
 * destroy hooks, closes the HTTP server, which waits for open requests, then the shutdown hooks:
 * last_used_at flush, database pool), exit 0. If that takes longer than `timeoutMs`
 * (SHUTDOWN_TIMEOUT_MS), or on a second signal, exit 1 at once.
 */
export function exitGracefullyOnSignals(app: INestApplication, timeoutMs: number): void {
  const logger = new Logger('Shutdown');
  let startedAt: number | undefined;
  const onSignal = (signal: NodeJS.Signals): void => {
    if (startedAt !== undefined) {
      logger.error({ signal }, 'second signal during shutdown; exiting now');
      process.exit(1);
    }
    startedAt = Date.now();
    app.get(ShutdownState).begin();
    logger.log({ signal, timeoutMs }, 'shutting down: finishing in-flight requests');
    const deadline = setTimeout(() => {
      logger.error({ timeoutMs }, 'shutdown timed out; exiting');
      process.exit(1);
    }, timeoutMs);
    deadline.unref();
    app.close().then(
      () => {
        logger.log({ elapsedMs: Date.now() - startedAt! }, 'shut down');
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
