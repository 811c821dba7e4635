import type { Verifier } from './index';
import { check, isRefusal } from './http';

/** The smallest shape of Express's request and response this middleware uses (no dependency on express). */
interface Req {
  headers: { authorization?: string | string[]; 'x-forwarded-for'?: string | string[] };
  socket?: { remoteAddress?: string };
  gatehouse?: import('./index').VerifiedAccess;
}
interface Res {
  status(code: number): Res;
  set(headers: Record<string, string>): Res;
  json(body: unknown): unknown;
}

/**
 * Express middleware: a request with a valid, unrevoked Gatehouse access token holding `scopes`, from an address its
 * key allows (verifier.clientAddress: the peer, or what the trusted proxies report), goes on with `req.gatehouse` set;
 * otherwise 401, 403 or 503 (stale feed) with a `{ code, message }` body.
 */
export function gatehouse(verifier: Verifier, scopes: readonly string[] = []) {
  return (req: Req, res: Res, next: (error?: unknown) => void): void => {
    check(verifier, req.headers.authorization, scopes, verifier.clientAddress(req)).then((result) => {
      if (isRefusal(result)) {
        res.status(result.status).set(result.headers).json(result.body);
        return;
      }
      req.gatehouse = result;
      next();
    }, next);
  };
}
