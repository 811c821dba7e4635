import { isLoopbackHost } from '../config/reader';

export const MAX_ISSUER_LENGTH = 255;

/**
 * Why `value` cannot be an issuer identifier (OpenID Connect Discovery 1.0 section 2: a URL with no query or fragment),
 * or null. The scheme is checked by {@link insecureUrlProblem}, which needs to know whether this is production.
 */
export function issuerShapeProblem(value: string): string | null {
  if (value.length === 0 || value.length > MAX_ISSUER_LENGTH) return `must be 1 to ${MAX_ISSUER_LENGTH} characters`;
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'must be an absolute URL, e.g. https://login.example.com';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') return 'must be an https:// URL';
  if (url.username !== '' || url.password !== '' || /[\s?#]/.test(value)) {
    return 'must have no credentials, query, fragment or spaces';
  }
  return null;
}

/** Why Gatehouse may not fetch from `value`, or null: https:// only, http:// on a loopback host outside production. */
export function insecureUrlProblem(value: string, production: boolean): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.protocol === 'https:') return null;
  if (url.protocol === 'http:' && isLoopbackHost(url.hostname)) {
    return production ? 'is http://, which production accepts on no host (https:// only)' : null;
  }
  return 'is not https:// (http:// only on a loopback host such as 127.0.0.1, and never in production)';
}
