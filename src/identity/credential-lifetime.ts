import { invalidArgument } from '../common/errors';
import { parseZonedTimestamp } from '../common/timestamp';

/*
 * How long a credential a member creates may live (docs/api.md#expiry-and-key-policy): the organization's key policy
 * and the caller's own credential bound it. One rule for every credential a member holds in an organization (API keys,
 * workload identities: docs/adr/0038-workload-identities.md), so it lives beside the organization's settings.
 */

/** The shortest time ahead an `expires_at` may be (docs/api.md#expiry-and-key-policy). */
export const MIN_KEY_LIFETIME_MS = 60_000;
const DAY_MS = 86_400_000;

/**
 * The latest expiry allowed at `now`: the organization's key policy (`policyDays`, null: none) and, when the request
 * uses an access token, the expiry of the credential behind it (`callerExpiresAtMs`, null or absent: none).
 * Null: no bound.
 */
export function latestExpiry(now: Date, policyDays: number | null, callerExpiresAtMs?: number | null): Date | null {
  const policy = policyDays === null ? null : new Date(now.getTime() + policyDays * DAY_MS);
  const caller = callerExpiresAtMs == null ? null : new Date(callerExpiresAtMs);
  return caller === null ? policy : earliest(caller, policy);
}

/**
 * The asked-for expiry, a zoned timestamp (400 when it is not one, is under MIN_KEY_LIFETIME_MS ahead or past
 * `latest`); null asks for none, which is `latest` (null: no bound).
 */
export function requestedExpiry(requested: string | null, now: Date, latest: Date | null): Date | null {
  if (requested === null) return latest;
  const at = parseZonedTimestamp(requested);
  if (at === null || at - now.getTime() < MIN_KEY_LIFETIME_MS) throw invalidArgument('expires_at_invalid');
  if (latest !== null && at > latest.getTime()) throw invalidArgument('expires_at_invalid');
  return new Date(at);
}

/** `at`, or `latest` when that is earlier (null: no bound). */
export function earliest(at: Date, latest: Date | null): Date {
  return latest !== null && latest < at ? latest : at;
}
