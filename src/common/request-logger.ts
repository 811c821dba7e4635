import { randomUUID } from 'node:crypto';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Request, RequestHandler } from 'express';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import { serializeError } from './log-redaction';

declare module 'express-serve-static-core' {
  interface Request {
    /** Request id: the caller's X-Request-Id when it is sane, else a new UUID. */
    id: string;
  }
}

/** Name of the request id on every log line made while serving a request. */
export const REQUEST_ID_KEY = 'requestId';

const PLACEHOLDER_ERROR = /^failed with status code \d+$/;
const SANE_REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/;

/**
 * The caller's X-Request-Id when it is sane (so a trace can be followed across services), else a new
 * UUID; a header made of anything else (spaces, control characters, JSON, a huge value) is not
 * echoed into our logs or headers. The response carries the id either way (DESIGN.md section 4).
 */
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

/**
 * The access log, and the per-request logger (`req.log`, bound to the request id) that nestjs-pino
 * hands to every Nest `Logger` call made while the request is served. Mounted first, before the
 * body parser, so that a request refused there (bad JSON, too large) also has its id and its line.
 * The request is logged by an allow-list (method, path, address): never its headers or body.
 */
export function requestLogger(logger: Logger): RequestHandler {
  const middleware = pinoHttp<IncomingMessage, ServerResponse>({
    logger,
    genReqId: requestIdFor,
    quietReqLogger: true,
    customAttributeKeys: { reqId: REQUEST_ID_KEY },
    customLogLevel: (_req, res, error) => (error !== undefined || res.statusCode >= 500 ? 'error' : 'info'),
    customSuccessMessage: () => 'request completed',
    customErrorMessage: () => 'request failed',
    // A 5xx is logged with its cause where it happened (the exception filter); the stack of the
    // placeholder error pino-http makes up for the status code would only add noise.
    customErrorObject: (_req, _res, error, value: { err?: unknown }) =>
      PLACEHOLDER_ERROR.test(error.message) ? { ...value, err: undefined } : value,
    serializers: {
      req: (req: { method?: string; url?: string; raw?: IncomingMessage }) => ({
        method: req.method,
        path: pathOf(req.url),
        ip: (req.raw as Request | undefined)?.ip,
      }),
      res: (res: { statusCode?: number }) => ({ statusCode: res.statusCode }),
      // pino-http installs its own error serializer on the request loggers unless given ours.
      err: serializeError,
    },
  });
  return middleware;
}
