import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { NextFunction, Request, RequestHandler, Response } from 'express';
import type { Logger } from 'pino';
import { clientAddress } from './client-address';
import { activeTracing } from './tracing';

/** The one augmentation of Express's Request: everything else a request carries is passed, never written on it. */
declare module 'express-serve-static-core' {
  interface Request {
    /** The request id (X-Request-Id), set first by the access log's middleware. */
    id: string;
  }
}

/** The request-duration metric (metrics/metrics.ts); null with METRICS_PORT=off. */
export type RequestObserver = (req: Request, res: Response, elapsedMs: number) => void;
export const REQUEST_OBSERVER = Symbol('REQUEST_OBSERVER');

export const REQUEST_ID_KEY = 'requestId';
/** With tracing on, every line logged while serving a request names its trace (docs/deployment.md#traces). */
export const TRACE_ID_KEY = 'traceId';

const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/** Echo a sane X-Request-Id so traces follow across services; never echo anything else (docs/operations.md). */
export function requestIdFor(req: IncomingMessage, res: ServerResponse): string {
  const given = req.headers['x-request-id'];
  const id = typeof given === 'string' && SANE_REQUEST_ID.test(given) ? given : randomUUID();
  res.setHeader('X-Request-Id', id);
  return id;
}

/** Path without the query string: a secret pasted into a query parameter must not reach the logs. */
function pathOf(url: string | undefined): string {
  const path = url ?? '';
  const query = path.indexOf('?');
  return query === -1 ? path : path.slice(0, query);
}

/** The revocation feed's polls: a verifier polls several times a minute, so their answers are logged at debug. */
const QUIET_PATH = /^\/ssf\/poll(?:\/[^/]+)?\/?$/i;

function isQuietAnswer(req: Request, res: Response, path: string): boolean {
  return res.statusCode >= 200 && res.statusCode < 300 && req.method === 'POST' && QUIET_PATH.test(path);
}

/** The access log, and `req.log`, which nestjs-pino hands to Nest `Logger` calls (docs/adr/0006-own-access-log-and-log-redaction.md). */
export function requestLogger(logger: Logger, observe: RequestObserver | null = null): RequestHandler {
  const tracing = activeTracing();
  return (req: Request, res: Response, next: NextFunction): void => {
    const id = requestIdFor(req, res);
    req.id = id;
    const traceId = tracing?.traceId();
    const log = logger.child(
      traceId === undefined ? { [REQUEST_ID_KEY]: id } : { [REQUEST_ID_KEY]: id, [TRACE_ID_KEY]: traceId },
    );
    req.log = log;
    const startedAt = performance.now();
    res.once('close', () => {
      const elapsedMs = performance.now() - startedAt;
      if (observe !== null) observe(req, res, elapsedMs);
      const path = pathOf(req.originalUrl ?? req.url);
      const fields = {
        req: { method: req.method, path, ip: clientAddress(req) },
        res: { statusCode: res.statusCode },
        responseTime: Math.round(elapsedMs),
      };
      if (!res.writableFinished) log.info(fields, 'request aborted');
      else if (res.statusCode >= 500) log.error(fields, 'request failed');
      else if (isQuietAnswer(req, res, path)) log.debug(fields, 'request completed');
      else log.info(fields, 'request completed');
    });
    next();
  };
}
