import type { Verifier } from './index';
import { check, isRefusal } from './http';
import { metadataResponse } from './resource-metadata';

/** The smallest shape of Express's request and response this middleware uses (no dependency on express). */
interface Req {
  headers: { authorization?: string | string[]; 'x-forwarded-for'?: string | string[] };
  socket?: { remoteAddress?: string };
  gatehouse?: import('./index').VerifiedAccess;
  method?: string;
  path?: string;
}
interface Res {
  status(code: number): Res;
  set(headers: Record<string, string>): Res;
  json(body: unknown): unknown;
}

/** The scopes a request needs: fixed, or read from the request (an MCP tool call names its tool in the body). */
export type RequiredScopes<R = Req> = readonly string[] | ((req: R) => readonly string[]);

/**
 * Express middleware: a request with a valid, unrevoked Gatehouse access token holding `scopes`, from an address its
 * key allows (verifier.clientAddress: the peer, or what the trusted proxies report), goes on with `req.gatehouse` set;
 * otherwise 401, 403 or 503 (stale feed) with a `{ code, message }` body.
 */
export function gatehouse<R extends Req = Req>(verifier: Verifier, scopes: RequiredScopes<R> = []) {
  return (req: R, res: Res, next: (error?: unknown) => void): void => {
    let required: readonly string[];
    try {
      required = typeof scopes === 'function' ? scopes(req) : scopes;
    } catch (error) {
      next(error);
      return;
    }
    check(verifier, req.headers.authorization, required, verifier.clientAddress(req)).then((result) => {
      if (isRefusal(result)) {
        res.status(result.status).set(result.headers).json(result.body);
        return;
      }
      req.gatehouse = result;
      next();
    }, next);
  };
}

/**
 * Express middleware answering GET (and HEAD) of the RFC 9728 protected resource metadata (`/.well-known/oauth-protected-
 * resource` and its path-suffixed form); any other request goes on. Mount it before `gatehouse(...)`:
 * `app.use(protectedResource(verifier))`. The verifier must have been created with `resourceMetadata`.
 */
export function protectedResource(verifier: Verifier) {
  const metadata = verifier.resourceMetadata;
  if (metadata === undefined) throw new TypeError('protectedResource: create the verifier with resourceMetadata');
  const { headers } = metadataResponse(metadata);
  return (req: Req, res: Res, next: (error?: unknown) => void): void => {
    if (
      (req.method !== 'GET' && req.method !== 'HEAD') ||
      req.path === undefined ||
      !metadata.paths.includes(req.path)
    ) {
      next();
      return;
    }
    res.status(200).set(headers).json(metadata.document);
  };
}
