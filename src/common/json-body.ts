import type { IncomingMessage } from 'node:http';
import type { Request } from 'express';

/**
 * How deep a request body's arrays and objects may nest. No body of the API nests past 4 levels;
 * JSON.parse and class-transformer cost grows with depth (docs/adr/0026-request-body-bounds.md).
 */
export const MAX_JSON_DEPTH = 32;

/**
 * A route whose body may be larger than BODY_LIMIT_BYTES, and the check it makes before its body is
 * read (a rate limit's slot): provided by the module that owns the route, used by http-setup.
 */
export interface LargeBodyRoute {
  readonly method: string;
  readonly path: string;
  readonly limitBytes: number;
  /** Throws (an AppError) to refuse the request before a byte of its body is read. */
  admit(req: Request): Promise<void>;
}
export const LARGE_BODY_ROUTE = Symbol('LARGE_BODY_ROUTE');

function bodyError(message: string, type: string): Error {
  return Object.assign(new Error(message), { type, status: 400, expose: true });
}

/** True when the brackets of `json` (UTF-8) nest deeper than `max`; stops at the first level past it. */
export function nestsDeeperThan(json: Uint8Array, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < json.length; i++) {
    const c = json[i];
    if (inString) {
      if (c === 0x5c) i++;
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

/**
 * body-parser's `verify`, run on the raw body before JSON.parse: JSON is UTF-8 (RFC 8259 section
 * 8.1), and nesting past MAX_JSON_DEPTH is refused unparsed. Both are 400 INVALID_ARGUMENT.
 */
export function verifyJsonBody(_req: IncomingMessage, _res: unknown, body: Buffer, encoding: string): void {
  if (encoding.toLowerCase() !== 'utf-8') throw bodyError('JSON must be UTF-8', 'charset.unsupported');
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) throw bodyError('JSON nested too deep', 'entity.too.deep');
}
