import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/** Codes and refresh tokens: 32 random bytes, base64url, under a prefix a secret scanner can match. */
export const CODE_PREFIX = 'gh_ac_';
export const REFRESH_PREFIX = 'gh_rt_';
const SECRET = /^gh_(ac|rt)_[A-Za-z0-9_-]{43}$/;

export function newSecret(prefix: string): string {
  return prefix + randomBytes(32).toString('base64url');
}

/** What is stored: the SHA-256 (256 bits of entropy need no pepper or slow hash). Null for what is not one of ours. */
export function secretHash(secret: string, prefix: string): string | null {
  if (!secret.startsWith(prefix) || !SECRET.test(secret)) return null;
  return createHash('sha256').update(secret, 'utf8').digest('hex');
}

/** RFC 7636 section 4.1: 43 to 128 unreserved characters. */
const VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;
/** A S256 challenge: the base64url SHA-256, 43 characters. */
export const S256_CHALLENGE = /^[A-Za-z0-9_-]{43}$/;

/** RFC 7636 section 4.6: BASE64URL(SHA256(verifier)) equals the challenge, compared in constant time. */
export function pkceMatches(verifier: string | undefined, challenge: string): boolean {
  if (verifier === undefined || !VERIFIER.test(verifier)) return false;
  const computed = Buffer.from(createHash('sha256').update(verifier, 'ascii').digest('base64url'));
  const expected = Buffer.from(challenge);
  return computed.length === expected.length && timingSafeEqual(computed, expected);
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
