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
