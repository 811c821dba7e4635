import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import express, { NextFunction, Request, Response } from 'express';
import type { AppConfiguration } from '../config/configuration';
import { CONSOLE_PATH, consoleRouter } from './console-assets';
import { AllExceptionsFilter } from './exception.filter';
import { setupOpenApi } from './openapi';
import { ROOT_LOGGER } from './logging.module';
import { REQUEST_OBSERVER, RequestObserver, requestLogger } from './request-logger';
import { ShutdownState } from './shutdown.state';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

/** Every body is JSON (docs/api.md): a body of another type is refused, not ignored. */
function requireJsonBody(req: Request, _res: Response, next: NextFunction): void {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  if (hasBody && !JSON_TYPE.test(req.headers['content-type'] ?? '')) {
    next(Object.assign(new Error('unsupported content type'), { type: 'content.type.unsupported', status: 400 }));
    return;
  }
  next();
}

/**
 * HTTP set-up shared by the server (main.ts) and the e2e tests, which build the app through
 * Nest's testing module with `bodyParser: false` and then call this.
 */
export function configureHttp(app: INestApplication, config: AppConfiguration): void {
  const expressApp = app as NestExpressApplication;
  expressApp.disable('x-powered-by');
  expressApp.set('etag', false);
  expressApp.set('trust proxy', config.trustProxy);
  // First: every request, even one the body parser refuses, gets its id (req.id, X-Request-Id), its log line and
  // its place in the request-duration metric (docs/operations.md#metrics).
  expressApp.use(requestLogger(app.get(ROOT_LOGGER), app.get<RequestObserver | null>(REQUEST_OBSERVER)));
  // Then, before any body is read: while draining for shutdown, new requests get 503 (docs/operations.md).
  expressApp.use(app.get(ShutdownState).gate);
  expressApp.use(requireJsonBody);
  expressApp.use(
    express.json({
      limit: config.bodyLimitBytes,
      strict: true,
      type: (req) => JSON_TYPE.test(req.headers['content-type'] ?? ''),
    }),
  );
  // Errors thrown by the middleware above (bad JSON, body too large) never reach Nest's filters.
  const filter = new AllExceptionsFilter();
  expressApp.use((error: unknown, req: Request, res: Response, next: NextFunction) =>
    filter.catch(error, {
      switchToHttp: () => ({ getRequest: () => req, getResponse: () => res, getNext: () => next }),
    } as never),
  );
  // The web console's static files, with their security headers (docs/operations.md#web-console).
  const consoleAssets = consoleRouter(config.console.assetsDir);
  if (consoleAssets !== undefined) expressApp.use(CONSOLE_PATH, consoleAssets);
  setupOpenApi(app);
  // No enableShutdownHooks() here: main.ts handles SIGTERM itself (exitGracefullyOnSignals), so that it drains
  // for SHUTDOWN_DRAIN_MS, resets no connection and exits 0 within SHUTDOWN_TIMEOUT_MS; tests close their apps
  // explicitly.
}
