/**
 * When an access token stops working: its own `exp`, or its key's `expires_at` when that comes first (a rotation's
 * grace end). Seconds rounded down, as the exchange caps a token's `exp` (docs/resource-servers.md#introspection).
 */
export function tokenExpiry(exp: number, keyExpiresAtMs: number | null | undefined): number {
  return keyExpiresAtMs == null ? exp : Math.min(exp, Math.floor(keyExpiresAtMs / 1000));
}

/** How long a gateway may keep an allowed answer: at most `maxSeconds`, and never past the key's expiry. */
export function cacheSeconds(maxSeconds: number, keyExpiresAtMs: number | null | undefined, nowMs: number): number {
  if (keyExpiresAtMs == null) return maxSeconds;
  return Math.max(0, Math.min(maxSeconds, Math.floor((keyExpiresAtMs - nowMs) / 1000)));
}
