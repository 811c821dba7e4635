/**
 * The checks of a subject token that need no key (docs/federation.md#subject-tokens, RFC 8725): the algorithm list,
 * the size bound, the times, the audience. Pure, so that each threshold is tested on its own.
 */

/** Asymmetric signatures only: never `none`, never HS* (an issuer's public key is no shared secret). */
export const ALLOWED_ALGORITHMS = ['RS256', 'PS256', 'ES256', 'EdDSA'] as const;
export type AllowedAlgorithm = (typeof ALLOWED_ALGORITHMS)[number];

/** A JWT from an identity provider is a few kilobytes; larger input is refused before it is parsed. */
export const MAX_SUBJECT_TOKEN_LENGTH = 16 * 1024;

export const CLOCK_LEEWAY_SECONDS = 60;

/** exp - iat: a subject token is a short-lived credential. */
export const MAX_SUBJECT_TOKEN_LIFETIME_SECONDS = 3600;

/**
 * Why a subject token was refused: for the audit log and the metrics only. The token exchange answers every one of
 * them with the same `invalid_grant`, except `issuer_unavailable` (503: nothing is known about the token yet).
 */
export const REFUSAL_REASONS = [
  'too_large',
  'malformed',
  'algorithm_not_allowed',
  'unknown_issuer',
  'issuer_unavailable',
  'bad_signature',
  'expired',
  'not_yet_valid',
  'lifetime_too_long',
  'wrong_audience',
] as const;
export type RefusalReason = (typeof REFUSAL_REASONS)[number];

export function isAllowedAlgorithm(alg: unknown): alg is AllowedAlgorithm {
  return typeof alg === 'string' && (ALLOWED_ALGORITHMS as readonly string[]).includes(alg);
}

/** The time claims as numbers (seconds since the epoch); exp and iat are required. */
export interface TimeClaims {
  exp: number;
  iat: number;
  nbf?: number;
}

/** expired, not_yet_valid or lifetime_too_long, or null; `now` in seconds. */
export function timeRefusal(claims: TimeClaims, now: number): RefusalReason | null {
  if (claims.exp <= now - CLOCK_LEEWAY_SECONDS) return 'expired';
  if (claims.iat > now + CLOCK_LEEWAY_SECONDS) return 'not_yet_valid';
  if (claims.nbf !== undefined && claims.nbf > now + CLOCK_LEEWAY_SECONDS) return 'not_yet_valid';
  if (claims.exp - claims.iat > MAX_SUBJECT_TOKEN_LIFETIME_SECONDS) return 'lifetime_too_long';
  return null;
}

/** Whether the `aud` claim (a string or an array of strings) contains `audience` exactly. */
export function audienceContains(aud: unknown, audience: string): boolean {
  return aud === audience || (Array.isArray(aud) && aud.includes(audience));
}
