import { coveredFamilies, formatCidr, Network, parseCidr } from '../common/cidr';
import { AppError, ErrorReason } from '../common/errors';

/**
 * What a key's owner may restrict beyond scopes and expiry (docs/api.md#allowlists-and-rate-limits): the client
 * addresses it may be used from, and how many requests it may make per window where Gatehouse sees each one.
 */

export const MAX_ALLOWED_CIDRS = 100;
/** The longest text of one entry: an IPv6 address with an IPv4 tail and a prefix is 49 characters. */
export const MAX_CIDR_LENGTH = 64;
export const MIN_RATE_LIMIT_REQUESTS = 1;
export const MAX_RATE_LIMIT_REQUESTS = 1_000_000;
export const MIN_RATE_LIMIT_WINDOW_SECONDS = 1;
export const MAX_RATE_LIMIT_WINDOW_SECONDS = 86_400;

export interface KeyRateLimit {
  requests: number;
  windowSeconds: number;
}

/** A key's policies as the API shows them: null where the key has none. */
export interface KeyPolicies {
  allowedCidrs: string[] | null;
  rateLimit: KeyRateLimit | null;
}

/** The organization's key policy for allowlists (docs/api.md#organization-settings). */
export interface AllowlistPolicy {
  requireKeyAllowlist: boolean;
}

const invalid = (message: string, reason: ErrorReason = 'allowed_cidrs_invalid'): AppError =>
  new AppError(reason, { message });

/** An entry as the message names it: JSON, cut so that no body makes a long message. */
function quoted(entry: string): string {
  return JSON.stringify(entry.length > MAX_CIDR_LENGTH ? `${entry.slice(0, MAX_CIDR_LENGTH)}…` : entry);
}

/**
 * `allowed_cidrs` as given (an array of strings, checked by the DTO) normalized: each entry a CIDR or a single address,
 * host bits zeroed, IPv6 in RFC 5952 form, duplicates dropped (first kept). Refused with a message that says why: not
 * a CIDR, more than MAX_ALLOWED_CIDRS, none at all, or (under an organization that requires allowlists) no list, an
 * entry that allows every address of a family (a /0), or entries that together do (`0.0.0.0/1` + `128.0.0.0/1`: their
 * merged ranges, coveredFamilies). Returns the stored text (comma-separated), or null for no allowlist.
 */
export function allowedCidrsToStore(given: readonly string[] | null, policy: AllowlistPolicy): string | null {
  if (given === null) {
    if (policy.requireKeyAllowlist) {
      throw new AppError('allowlist_required');
    }
    return null;
  }
  if (given.length === 0) throw invalid('allowed_cidrs must hold at least one CIDR (null: any address)');
  if (given.length > MAX_ALLOWED_CIDRS) throw invalid(`allowed_cidrs holds at most ${MAX_ALLOWED_CIDRS} entries`);
  const normalized: string[] = [];
  const networks: Network[] = [];
  for (const entry of given) {
    const network = parseCidr(entry);
    if (network === null) throw invalid(`allowed_cidrs: ${quoted(entry)} is not an IPv4 or IPv6 CIDR or address`);
    if (policy.requireKeyAllowlist && coversAFamily([network]) !== null) {
      throw invalid(
        `allowed_cidrs: ${quoted(entry)} allows every address, which the organization's key policy forbids`,
        'allowlist_too_broad',
      );
    }
    const cidr = formatCidr(network);
    if (!normalized.includes(cidr)) normalized.push(cidr);
    networks.push(network);
  }
  const family = policy.requireKeyAllowlist ? coversAFamily(networks) : null;
  if (family !== null) {
    throw invalid(
      `allowed_cidrs together allow every ${family} address, which the organization's key policy forbids`,
      'allowlist_too_broad',
    );
  }
  return normalized.join(',');
}

/** The family whose every address the networks allow together, or null. */
function coversAFamily(networks: readonly Network[]): 'IPv4' | 'IPv6' | null {
  const coverage = coveredFamilies(networks);
  return coverage.ipv4 ? 'IPv4' : coverage.ipv6 ? 'IPv6' : null;
}

/** The stored allowlist as the API shows it. */
export function allowedCidrsOf(stored: string | null): string[] | null {
  return stored === null ? null : stored.split(',');
}

/** The key's rate limit from its two columns (both set, or neither). */
export function rateLimitOf(key: {
  rateLimitRequests: number | null;
  rateLimitWindowSeconds: number | null;
}): KeyRateLimit | null {
  return key.rateLimitRequests === null || key.rateLimitWindowSeconds === null
    ? null
    : { requests: key.rateLimitRequests, windowSeconds: key.rateLimitWindowSeconds };
}
