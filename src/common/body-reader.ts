import type { NextFunction, Request, Response } from 'express';
import { ErrorCode, HTTP_STATUS } from './errors';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-body';

export type Middleware = (req: Request, res: Response, next: NextFunction) => void;

/** POST /v1/token only: requests whose body was not JSON or malformed, answered 400 after the key was checked. */
const unreadable = new WeakSet<Request>();

export function markUnreadable(req: Request): void {
  unreadable.add(req);
}

export function isUnreadable(req: Request): boolean {
  return unreadable.has(req);
}

/** A body-parser style error (the exception filter's isBodyParserError), its status that of `code`. */
export function bodyError(type: string, code: ErrorCode, message = type): Error {
  return Object.assign(new Error(message), { type, status: HTTP_STATUS[code], expose: true });
}

/**
 * Answers with `error` a request whose body was not read to its end, and keeps the rest unread: the answer says
 * `Connection: close`, and Node closes the connection once it is written. Without it Node reads and discards what is
 * left to keep the connection, however long that is (a 10 GB Content-Length, a chunked body without end:
 * docs/adr/0026-request-body-bounds.md).
 */
export function refuseUnread(req: Request, res: Response, next: NextFunction, error: Error): void {
  req.pause();
  res.setHeader('Connection', 'close');
  next(error);
}

/** Whether the request says it has a body larger than `limit`, or one of a size it does not say (chunked). */
export function mayExceed(req: Request, limit: number): boolean {
  const length = req.headers['content-length'];
  return length === undefined ? req.headers['transfer-encoding'] !== undefined : Number(length) > limit;
}

/** The charset of the Content-Type, lower-cased; undefined when none is given. */
function charset(req: Request): string | undefined {
  return /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers['content-type'] ?? '')?.[1].toLowerCase();
}

/**
 * A body read whole, at most `limit` bytes, then `parse`d into req.body. UTF-8 only (RFC 8259 section 8.1; forms: the
 * WHATWG encoding), not compressed. A body past the limit is 413 at once, from its Content-Length before a byte is
 * read or as soon as a chunked one passes it, and nothing more of it is read (refuseUnread).
 */
function bodyReader(limit: number, parse: (bytes: Buffer) => unknown): Middleware {
  return (req, res, next) => {
    if (req.headers['content-length'] === undefined && req.headers['transfer-encoding'] === undefined) {
      next();
      return;
    }
    if (Number(req.headers['content-length']) > limit) {
      refuseUnread(req, res, next, bodyError('entity.too.large', ErrorCode.PAYLOAD_TOO_LARGE));
      return;
    }
    const encoding = req.headers['content-encoding']?.toLowerCase();
    if (encoding !== undefined && encoding !== 'identity') {
      refuseUnread(req, res, next, bodyError('encoding.unsupported', ErrorCode.INVALID_ARGUMENT));
      return;
    }
    const declared = charset(req);
    if (declared !== undefined && declared !== 'utf-8' && declared !== 'utf8') {
      refuseUnread(req, res, next, bodyError('charset.unsupported', ErrorCode.INVALID_ARGUMENT));
      return;
    }
    const chunks: Buffer[] = [];
    let size = 0;
    const stop = (): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size <= limit) {
        chunks.push(chunk);
        return;
      }
      stop();
      refuseUnread(req, res, next, bodyError('entity.too.large', ErrorCode.PAYLOAD_TOO_LARGE));
    };
    const onError = (error: Error): void => {
      stop();
      next(Object.assign(error, { type: 'request.aborted', status: HTTP_STATUS[ErrorCode.INVALID_ARGUMENT] }));
    };
    const onEnd = (): void => {
      stop();
      let body: unknown;
      try {
        // A small body arrives in one chunk: no copy then.
        body = parse(chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size));
      } catch (error) {
        next(error);
        return;
      }
      req.body = body;
      next();
    };
    req.on('data', onData);
    req.on('end', onEnd);
    req.on('error', onError);
    sendContinue(req, res);
  };
}

/**
 * `100 Continue` for a request that asked for it (`Expect: 100-continue`, RFC 9110 section 10.1.1), sent once its body
 * is going to be read: the server answers checkContinue by routing the request as any other (http-setup.ts), so a body
 * refused before it is read (413 from its Content-Length, its type, the shutdown's 503, ...) gets its final answer
 * without a `100 Continue`, and the client never sends it.
 */
function sendContinue(req: Request, res: Response): void {
  if (/(?:^|,)\s*100-continue\s*(?:,|$)/i.test(req.headers.expect ?? '')) res.writeContinue();
}

/**
 * JSON (docs/api.md#conventions): an object or an array, nested at most MAX_JSON_DEPTH deep, checked on the bytes
 * before JSON.parse (docs/adr/0026-request-body-bounds.md). An empty body is `{}`.
 */
export function parseJson(bytes: Buffer): unknown {
  if (nestsDeeperThan(bytes, MAX_JSON_DEPTH))
    throw bodyError('entity.too.deep', ErrorCode.INVALID_ARGUMENT, 'JSON nested too deep');
  const text = bytes.toString('utf8');
  // JSON's whitespace (RFC 8259 section 2) and a byte order mark.
  const first = /^[\uFEFF \t\n\r]*([^\uFEFF \t\n\r])/.exec(text)?.[1];
  if (first === undefined) return {};
  if (first !== '{' && first !== '[')
    throw bodyError('entity.parse.failed', ErrorCode.INVALID_ARGUMENT, 'JSON must be an object or array');
  try {
    return JSON.parse(text.charCodeAt(0) === 0xfeff ? text.slice(1) : text) as unknown;
  } catch {
    throw bodyError('entity.parse.failed', ErrorCode.INVALID_ARGUMENT, 'malformed JSON');
  }
}

/**
 * A form (RFC 6749 section 4.4.2, RFC 7662 section 2.1) parsed with URLSearchParams (a third of body-parser's cost on
 * the client-credentials grant, docs/adr/0029-oauth-for-resource-servers.md#measured): a repeated parameter becomes an array, which
 * the endpoints refuse (RFC 6749 section 3.2).
 */
export function parseForm(bytes: Buffer): Record<string, string | string[]> {
  // No prototype: a parameter named __proto__ is a parameter like any other.
  const body = Object.create(null) as Record<string, string | string[]>;
  for (const [name, value] of new URLSearchParams(bytes.toString('utf8'))) {
    const seen = body[name];
    body[name] = seen === undefined ? value : ([] as string[]).concat(seen, value);
  }
  return body;
}

export const jsonBody = (limit: number): Middleware => bodyReader(limit, parseJson);
export const formBody = (limit: number): Middleware => bodyReader(limit, parseForm);
