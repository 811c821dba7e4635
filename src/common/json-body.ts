import type { IncomingMessage } from 'node:http';
import type { Request } from 'express';

/** Parse cost grows with depth; no API body nests past 4 (docs/adr/0026-request-body-bounds.md). */
export const MAX_JSON_DEPTH = 32;

/** A route allowed a body above BODY_LIMIT_BYTES, with the check it makes before the body is read. */
export interface LargeBodyRoute {
  readonly method: string;
  readonly path: string;
  readonly limitBytes: number;
  admit(req: Request): Promise<void>;
}
export const LARGE_BODY_ROUTE = Symbol('LARGE_BODY_ROUTE');

function bodyError(message: string, type: string): Error {
  return Object.assign(new Error(message), { type, status: 400, expose: true });
}

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

/** body-parser's `verify`: JSON must be UTF-8 (RFC 8259 8.1); deep nesting is refused unparsed. */
export function verifyJsonBody(_req: IncomingMessage, _res: unknown, body: Buffer, encoding: string): void {
  if (encoding.toLowerCase() !== 'utf-8') throw bodyError('JSON must be UTF-8', 'charset.unsupported');
  if (nestsDeeperThan(body, MAX_JSON_DEPTH)) throw bodyError('JSON nested too deep', 'entity.too.deep');
}
