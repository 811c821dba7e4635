import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import express, { NextFunction, Request, Response } from 'express';
import type { AppConfiguration } from '../config/configuration';
import { CONSOLE_PATH, consoleRouter, DOCS_PATH, docsSecurityHeaders, noSniff } from './console-assets';
import { LARGE_BODY_ROUTE, LargeBodyRoute, verifyJsonBody } from './json-body';
import { AllExceptionsFilter, isBodyParserError } from './exception.filter';
import { setupOpenApi } from './openapi';
import { ROOT_LOGGER } from './logging.module';
import { REQUEST_OBSERVER, RequestObserver, requestLogger } from './request-logger';
import { ShutdownState } from './shutdown.state';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

declare module 'express-serve-static-core' {
  interface Request {
    /** POST /v1/token only: non-JSON or malformed body, answered after the header check. */
    unreadableBody?: true;
  }
}

const TOKEN_PATH = '/v1/token';

/** A body refused for its type, charset or JSON, not for its size (413 is answered at once, on every route). */
function isUnreadableBody(error: unknown): boolean {
  return isBodyParserError(error) && (error.status ?? 500) < 500 && error.type !== 'entity.too.large';
}

/** A path as Express's routing compares it: case-insensitive, optional trailing slash. */
function routePath(path: string): string {
  return (path.length > 1 && path.endsWith('/') ? path.slice(0, -1) : path).toLowerCase();
}

/** The OAuth endpoints take form bodies (RFC 6749 section 4.4.2, RFC 7662 section 2.1). */
const FORM_PATHS = ['/oauth/token', '/oauth/introspect'];
const FORM_TYPE = /^application\/x-www-form-urlencoded\s*(?:;|$)/i;
/** Forward auth reads headers only: a gateway may pass any method and body along, which are not read. */
const FORWARD_AUTH_PATH = '/v1/forward-auth';

/** Which body a request may carry, decided once from its method and path. */
type BodyKind = 'none' | 'form' | 'large' | 'json';

function bodyKind(req: Request, large: LargeBodyRoute): BodyKind {
  const path = routePath(req.path);
  if (path === FORWARD_AUTH_PATH) return 'none';
  if (req.method === 'POST' && FORM_PATHS.includes(path)) return 'form';
  return req.method === large.method && path === large.path ? 'large' : 'json';
}

/** A body-parser style error (the exception filter's isBodyParserError). */
function bodyError(type: string, status: number, message = type): Error {
  return Object.assign(new Error(message), { type, status });
}

/**
 * The OAuth endpoints' form bodies, read and parsed with URLSearchParams (a third of body-parser's cost on the
 * client-credentials grant, docs/performance.md#resource-servers): UTF-8 only, at most `limit` bytes; a repeated
 * parameter becomes an array, which the endpoints refuse (RFC 6749 section 3.2).
 */
function formBody(limit: number): (req: Request, res: Response, next: NextFunction) => void {
  return (req, _res, next) => {
    const charset = /;\s*charset\s*=\s*"?([^";]+)/i.exec(req.headers['content-type'] ?? '')?.[1].toLowerCase();
    if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
      req.resume();
      next(bodyError('charset.unsupported', 415));
      return;
    }
    if (Number(req.headers['content-length'] ?? 0) > limit) {
      req.resume();
      next(bodyError('entity.too.large', 413));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    let failed = false;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit && !failed) {
        failed = true;
        next(bodyError('entity.too.large', 413));
      }
      if (!failed) chunks.push(chunk);
    });
    req.on('error', (error) => {
      if (failed) return;
      failed = true;
      next(Object.assign(error, { type: 'request.aborted', status: 400 }));
    });
    req.on('end', () => {
      if (failed) return;
      // A small form arrives in one chunk: no copy then.
      const text = (chunks.length === 1 ? chunks[0] : Buffer.concat(chunks)).toString('utf8');
      // No prototype: a parameter named __proto__ is a parameter like any other.
      const body = Object.create(null) as Record<string, string | string[]>;
      for (const [name, value] of new URLSearchParams(text)) {
        const seen = body[name];
        body[name] = seen === undefined ? value : ([] as string[]).concat(seen, value);
      }
      req.body = body;
      next();
    });
  };
}

/** Every body is JSON (docs/api.md), forms on the OAuth endpoints: a body of another type is refused, not ignored. */
function hasUnsupportedType(req: Request, kind: BodyKind): boolean {
  const type = req.headers['content-type'] ?? '';
  if (kind === 'form') return !FORM_TYPE.test(type);
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length'] ?? 0) > 0;
  return hasBody && !JSON_TYPE.test(type);
}

/** Shared by main.ts and the e2e tests (which build the app with `bodyParser: false`). */
export function configureHttp(app: INestApplication, config: AppConfiguration): void {
  const expressApp = app as NestExpressApplication;
  expressApp.disable('x-powered-by');
  expressApp.set('etag', false);
  expressApp.set('trust proxy', config.trustProxy);
  // First, so even requests the body parser refuses get an id, a log line and a metric (docs/operations.md#metrics).
  expressApp.use(requestLogger(app.get(ROOT_LOGGER), app.get<RequestObserver | null>(REQUEST_OBSERVER)));
  expressApp.use(noSniff);
  // Before any body is read: while draining, new requests get 503 (docs/operations.md).
  expressApp.use(app.get(ShutdownState).gate);
  const json = (limit: number) =>
    express.json({
      limit,
      strict: true,
      type: (req) => JSON_TYPE.test(req.headers['content-type'] ?? ''),
      verify: verifyJsonBody,
    });
  const parseJson = json(config.bodyLimitBytes);
  // The larger limit applies only on the exact route and only after its own admission check, before a byte is read.
  const large = app.get<LargeBodyRoute>(LARGE_BODY_ROUTE, { strict: false });
  const parseLarge = json(Math.max(config.bodyLimitBytes, large.limitBytes));
  const parseForm = formBody(config.bodyLimitBytes);
  expressApp.use((req: Request, res: Response, next: NextFunction) => {
    const kind = bodyKind(req, large);
    if (kind === 'none') {
      next();
    } else if (hasUnsupportedType(req, kind)) {
      next(bodyError('content.type.unsupported', 400, 'unsupported content type'));
    } else if (kind === 'form') {
      parseForm(req, res, next);
    } else if (kind === 'json') {
      parseJson(req, res, next);
    } else {
      large.admit(req).then(() => parseLarge(req, res, next), next);
    }
  });
  // POST /v1/token authenticates before it looks at the body, so a bad body is answered 400 only after the header
  // check (docs/api.md#post-v1token).
  expressApp.use(TOKEN_PATH, (error: unknown, req: Request, _res: Response, next: NextFunction) => {
    if (isUnreadableBody(error) && req.method === 'POST' && req.path === '/') {
      req.unreadableBody = true;
      next();
      return;
    }
    next(error);
  });
  // Errors thrown by the middleware above (bad JSON, body too large) never reach Nest's filters.
  const filter = new AllExceptionsFilter();
  expressApp.use((error: unknown, req: Request, res: Response, next: NextFunction) =>
    filter.catch(error, {
      switchToHttp: () => ({ getRequest: () => req, getResponse: () => res, getNext: () => next }),
    } as never),
  );
  // docs/operations.md#web-console
  const consoleAssets = consoleRouter(config.console.assetsDir);
  if (consoleAssets !== undefined) expressApp.use(CONSOLE_PATH, consoleAssets);
  expressApp.use(DOCS_PATH, docsSecurityHeaders);
  setupOpenApi(app);
  // No enableShutdownHooks(): main.ts handles SIGTERM itself to drain cleanly; tests close their apps explicitly.
}
