import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { INestApplication } from '@nestjs/common';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import type { AppConfiguration } from '../config/configuration';
import { CONSOLE_PATH, consoleRouter, DOCS_PATH, docsSecurityHeaders, noSniff } from './console-assets';
import { bodyError, formBody, jsonBody, markUnreadable, mayExceed, Middleware, refuseUnread } from './body-reader';
import { LARGE_BODY_ROUTE, LargeBodyRoute } from './json-body';
import { FORM_TYPE } from './client-credentials';
import { ErrorCode } from './errors';
import { AllExceptionsFilter, isBodyParserError } from './exception.filter';
import { setupOpenApi } from './openapi';
import { ROOT_LOGGER } from './logging.module';
import { REQUEST_OBSERVER, RequestObserver, requestLogger } from './request-logger';
import { ShutdownState } from './shutdown.state';

const JSON_TYPE = /^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i;

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
/** Forward auth reads headers only: a gateway may pass any method and body along, which are not read. */
const FORWARD_AUTH_PATH = '/v1/forward-auth';

/**
 * Every answer of forward auth depends on the Authorization header, and none may be kept but the allowed one, whose
 * Cache-Control the controller sets: a refusal says so from here, before routing, whoever answers it (the shutdown's
 * 503, a database's 503, a 400, 401 or 403). docs/resource-servers.md#forward-auth
 */
function forwardAuthCaching(req: Request, res: Response, next: NextFunction): void {
  if (routePath(req.path) === FORWARD_AUTH_PATH) {
    res.setHeader('Vary', 'Authorization').setHeader('Cache-Control', 'no-store');
  }
  next();
}

/** The revocation feed's polls (`/ssf/poll`, `/ssf/poll/{stream_id}`) carry up to 1,000 acknowledgements. */
const POLL_PATH = /^\/ssf\/poll(?:\/[^/]+)?$/;
/** 1,000 acknowledgements are about 39 KB (docs/adr/0031-revocation-feed-in-production.md). */
export const POLL_BODY_LIMIT_BYTES = 64 * 1024;

/** Dynamic client registration (RFC 7591): a public endpoint, its metadata small (docs/mcp.md#dynamic-client-registration). */
const REGISTRATION_PATH = '/oauth/register';
export const REGISTRATION_BODY_LIMIT_BYTES = 8 * 1024;

/** Which body a request may carry, decided once from its method and path. */
type BodyKind = 'none' | 'form' | 'large' | 'poll' | 'registration' | 'json';

function bodyKind(req: Request, large: LargeBodyRoute): BodyKind {
  const path = routePath(req.path);
  if (path === FORWARD_AUTH_PATH) return 'none';
  if (req.method === 'POST' && FORM_PATHS.includes(path)) return 'form';
  if (req.method === 'POST' && POLL_PATH.test(path)) return 'poll';
  if (path === REGISTRATION_PATH) return 'registration';
  return req.method === large.method && path === large.path ? 'large' : 'json';
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
  // Expect: 100-continue: Node would answer `100 Continue` before the request is routed, inviting a body of any size
  // that is then refused. The request is routed as any other instead, and `100 Continue` is sent by the body reader
  // when it starts reading (body-reader.ts): a body refused unread, a Content-Length over the limit first, gets only its
  // final answer (docs/adr/0034-refused-bodies-are-not-read.md).
  const server = app.getHttpServer() as Server;
  server.on('checkContinue', (req: IncomingMessage, res: ServerResponse) => server.emit('request', req, res));
  // First, so even requests the body parser refuses get an id, a log line and a metric (docs/operations.md#metrics).
  expressApp.use(requestLogger(app.get(ROOT_LOGGER), app.get<RequestObserver | null>(REQUEST_OBSERVER)));
  expressApp.use(noSniff);
  expressApp.use(forwardAuthCaching);
  // Before any body is read: while draining, new requests get 503 (docs/operations.md).
  expressApp.use(app.get(ShutdownState).gate);
  // JSON is read only under a JSON type: a body of another type was refused, an empty one stays undefined.
  const json = (limit: number): Middleware => {
    const read = jsonBody(limit);
    return (req, res, next) => (JSON_TYPE.test(req.headers['content-type'] ?? '') ? read(req, res, next) : next());
  };
  const parseJson = json(config.bodyLimitBytes);
  // The larger limit applies only on the exact route and only after its own admission check, before a byte is read.
  const large = app.get<LargeBodyRoute>(LARGE_BODY_ROUTE);
  const parseLarge = json(Math.max(config.bodyLimitBytes, large.limitBytes));
  const parsePoll = json(Math.max(config.bodyLimitBytes, POLL_BODY_LIMIT_BYTES));
  const parseRegistration = json(Math.min(config.bodyLimitBytes, REGISTRATION_BODY_LIMIT_BYTES));
  const parseForm = formBody(config.bodyLimitBytes);
  expressApp.use((req: Request, res: Response, next: NextFunction) => {
    const kind = bodyKind(req, large);
    if (kind === 'none') {
      // Not read: past the limit, or chunked, the connection closes after the answer instead of Node reading it all.
      if (mayExceed(req, config.bodyLimitBytes)) res.setHeader('Connection', 'close');
      next();
    } else if (hasUnsupportedType(req, kind)) {
      refuseUnread(
        req,
        res,
        next,
        bodyError('content.type.unsupported', ErrorCode.INVALID_ARGUMENT, 'unsupported content type'),
      );
    } else if (kind === 'form') {
      parseForm(req, res, next);
    } else if (kind === 'json') {
      parseJson(req, res, next);
    } else if (kind === 'poll') {
      parsePoll(req, res, next);
    } else if (kind === 'registration') {
      parseRegistration(req, res, next);
    } else {
      // The admission's refusal (429) comes before a byte of the body is read.
      large.admit(req).then(
        () => parseLarge(req, res, next),
        (error: Error) => refuseUnread(req, res, next, error),
      );
    }
  });
  // POST /v1/token authenticates before it looks at the body, so a bad body is answered 400 only after the header
  // check (docs/api.md#post-v1token).
  expressApp.use(TOKEN_PATH, (error: unknown, req: Request, _res: Response, next: NextFunction) => {
    if (isUnreadableBody(error) && req.method === 'POST' && req.path === '/') {
      markUnreadable(req);
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
