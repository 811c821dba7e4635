import { createHash, randomFillSync, timingSafeEqual } from 'node:crypto';

/** Codes and refresh tokens: 32 random bytes, base64url, under a prefix a secret scanner can match. */
export const CODE_PREFIX = 'gh_ac_';
export const REFRESH_PREFIX = 'gh_rt_';
const CODE = /^gh_ac_[A-Za-z0-9_-]{43}$/;
/** A refresh token names its chain (a uuid's 16 bytes, 22 characters) before its 32 random bytes. */
const REFRESH = /^gh_rt_([A-Za-z0-9_-]{22})[A-Za-z0-9_-]{43}$/;

/**
 * Random bytes drawn 4 KiB at a time and never handed out twice (as node:crypto's randomUUID pools them): one
 * randomBytes(32) call cost 12 µs a refresh in the server's profile, the pool a fraction of one
 * (docs/adr/0061-code-and-refresh-cost.md).
 */
const pool = Buffer.alloc(4096);
let pooled = 0;

function randomBase64url(bytes: number): string {
  if (pooled < bytes) {
    randomFillSync(pool);
    pooled = pool.length;
  }
  const start = pool.length - pooled;
  pooled -= bytes;
  const value = pool.toString('base64url', start, start + bytes);
  pool.fill(0, start, start + bytes);
  return value;
}

export function newSecret(prefix: string): string {
  return prefix + randomBase64url(32);
}

/** The next refresh token of a chain (its id, a uuid): a new secret, the same chain. */
export function newRefreshToken(chainId: string): string {
  return REFRESH_PREFIX + Buffer.from(chainId.replaceAll('-', ''), 'hex').toString('base64url') + randomBase64url(32);
}

/** The chain a refresh token names (a uuid), or null for what is not one of ours. */
export function refreshChainOf(token: string): string | null {
  const named = REFRESH.exec(token)?.[1];
  if (named === undefined) return null;
  const bytes = Buffer.from(named, 'base64url');
  // One spelling a chain: 22 characters carry 132 bits, the last 4 of which must be zero.
  if (bytes.length !== 16 || bytes.toString('base64url') !== named) return null;
  const hex = bytes.toString('hex');
  return `${hex.slice(0, 8)}-${hex.slice(8, 12)}-${hex.slice(12, 16)}-${hex.slice(16, 20)}-${hex.slice(20)}`;
}

/** What is stored: the SHA-256 (256 bits of entropy need no pepper or slow hash). Null for what is not one of ours. */
export function secretHash(secret: string, prefix: string): string | null {
  const shape = prefix === CODE_PREFIX ? CODE : prefix === REFRESH_PREFIX ? REFRESH : null;
  if (shape === null || !shape.test(secret)) return null;
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** RFC 7636 section 4.1: 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
/** A S256 challenge: the base64url SHA-256, 43 characters. */
export const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** RFC 7636 section 4.6: BASE64URL(SHA256(verifier)) equals the challenge, compared in constant time. */
export function pkceMatches(verifier: string | undefined, challenge: string): boolean {
  const challenged = s256Challenge(verifier);
  if (challenged === null) return false;
  const computed = Buffer.from(challenged);
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
}

/** The S256 challenge of a well-formed verifier (RFC 7636 section 4.2), or null. */
export function s256Challenge(verifier: string | undefined): string | null {
  if (verifier === undefined || !VERIFIER.test(verifier)) return null;
  return createHash('sha256').update(verifier, 'ascii').digest('base64url');
}

/** Scopes as stored and minted: distinct names, sorted, space-separated. */
export function scopeSet(scope: string | undefined): string[] {
  if (scope === undefined) return [];
  return [...new Set(scope.split(' ').filter((name) => name !== ''))].sort();
}

export function covers(granted: string, asked: readonly string[]): boolean {
  const have = new Set(scopeSet(granted));
  return asked.every((name) => have.has(name));
}
