/** How long Gatehouse waits for an identity provider, and how long it keeps what it fetched (docs/federation.md). */
export interface FederationTimings {
  /** Each request to an issuer: its discovery document, its key set. */
  httpTimeoutMs: number;
  /** An unknown `kid` fetches the key set again at most this often (jose's cooldownDuration). */
  jwksCooldownMs: number;
  /** The key set is fetched again when older than this (jose's cacheMaxAge). */
  jwksMaxAgeMs: number;
  /** The discovery document is fetched again when older than this; a failed refresh keeps the last one. */
  metadataMaxAgeMs: number;
}

export const FEDERATION_TIMINGS = Symbol('FEDERATION_TIMINGS');

/** Keycloak waits 10 s between key set fetches for an unknown kid; jose keeps a key set 10 minutes. */
export const DEFAULT_FEDERATION_TIMINGS: FederationTimings = {
  httpTimeoutMs: 3000,
  jwksCooldownMs: 10_000,
  jwksMaxAgeMs: 10 * 60_000,
  metadataMaxAgeMs: 60 * 60_000,
};
