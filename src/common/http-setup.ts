import { randomUUID } from 'node:crypto';
import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import express, { NextFunction, Request, Response } from 'express';
import type { AppConfiguration } from '../config/configuration';
import { AllExceptionsFilter } from './exception.filter';

declare module 'express-serve-static-core' {
  interface Request {
    /** Request id: the caller's X-Request-Id when it is sane, else a new UUID. */
    id: string;
  }
}

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;
const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

function requestId(req: Request, res: Response, next: NextFunction): void {
  const given = req.headers['x-request-id'];
  req.id = typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
  res.setHeader('X-Request-Id', req.id);
  next();
}

/** Every body is JSON (DESIGN.md section 2): a body of another type is refused, not ignored. */
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
  expressApp.use(requestId);
  expressApp.use(requireJsonBody);
  expressApp.use(
    express.json({
      limit: config.bodyLimitBytes,
      strict: true,
      type: (req) => JSON_TYPE.test(req.headers['content-type'] ?? ''),
    }),
  );
  // Errors thrown by the middleware above (bad JSON, body too large) never reach Nest's filters.
  expressApp.use((error: unknown, req: Request, res: Response, next: NextFunction) =>
    new AllExceptionsFilter().catch(error, {
      switchToHttp: () => ({ getRequest: () => req, getResponse: () => res, getNext: () => next }),
    } as never),
  );
  app.enableShutdownHooks();
}
