import { outboundUrlProblem, PrivateNetworks } from '../common/address-rules';
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

/**
 * Why Gatehouse may not fetch from `value`, or null: the rules webhooks follow (common/address-rules.ts): https://
 * only, http:// to a loopback host outside production; no IP address (nor `localhost`) that is private, loopback,
 * link-local, multicast or reserved (loopback allowed outside production). A host name is resolved and its addresses
 * checked when Gatehouse connects (bounded-fetch.ts).
 */
export function insecureUrlProblem(
  value: string,
  production: boolean,
  privateNetworks?: PrivateNetworks,
): string | null {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return 'is not an absolute URL';
  }
  if (url.protocol !== 'https:' && url.protocol !== 'http:') {
    return 'is not https:// (http:// only on a loopback host such as 127.0.0.1, and never in production)';
  }
  switch (outboundUrlProblem(url, production, privateNetworks)) {
    case 'not_https':
      return production && isLoopbackHost(url.hostname)
        ? 'is http://, which production accepts on no host (https:// only)'
        : 'is not https:// (http:// only on a loopback host such as 127.0.0.1, and never in production)';
    case 'address':
      return production
        ? 'points to a private, loopback, link-local, multicast or reserved address, which Gatehouse does not call in production (a private one only in IDENTITY_PROVIDER_NETWORKS)'
        : 'points to a private, link-local, multicast or reserved address, which Gatehouse does not call (a private one only in IDENTITY_PROVIDER_NETWORKS)';
    case null:
      return null;
  }
}

/**
 * The origin `value` names (`https://host[:port]`, as `URL.origin` writes it), or why it is none: an `--allow-origin`
 * is a scheme, a host and maybe a port, nothing else, and follows the rules of {@link insecureUrlProblem}.
 */
export function parseOrigin(
  value: string,
  production: boolean,
  privateNetworks?: PrivateNetworks,
): { origin: string } | { problem: string } {
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    return { problem: 'must be an origin, e.g. https://keys.example.com' };
  }
  const bare = url.pathname === '/' && url.search === '' && url.hash === '' && !/[?#]/.test(value);
  if (url.username !== '' || url.password !== '' || !bare || !/^https?:\/\/[^/]+\/?$/.test(value)) {
    return { problem: 'must be an origin (scheme, host and port only), e.g. https://keys.example.com' };
  }
  const problem = insecureUrlProblem(value, production, privateNetworks);
  return problem === null ? { origin: url.origin } : { problem };
}

/**
 * Why Gatehouse may not use `endpoint`, announced by the issuer's discovery document, or null: the URL rules of
 * {@link insecureUrlProblem}, and the issuer's own origin or one the operator allowed: a document
 * cannot send Gatehouse anywhere else (docs/federation.md#discovery).
 */
export function endpointProblem(
  endpoint: string,
  issuer: string,
  options: { production: boolean; allowedOrigins: readonly string[]; privateNetworks?: PrivateNetworks },
): IssuerProblem | null {
  const problem = insecureUrlProblem(endpoint, options.production, options.privateNetworks);
  if (problem !== null) return new IssuerProblem(problem);
  const origin = new URL(endpoint).origin;
  const own = new URL(issuer).origin;
  if (origin === own || options.allowedOrigins.includes(origin)) return null;
  const allowed =
    options.allowedOrigins.length > 0 ? ` nor one allowed for it (${options.allowedOrigins.join(', ')})` : '';
  return new IssuerProblem(`is on ${origin}, not the issuer's origin ${own}${allowed}`, origin);
}

/**
 * Why Gatehouse may not use an issuer or one of its endpoints: the words, and the endpoint's origin when that origin is
 * all that is wrong (the operator may allow it; how to is the renderer's to say, docs/federation.md#discovery).
 */
export class IssuerProblem {
  constructor(
    readonly text: string,
    readonly foreignOrigin?: string,
  ) {}
}
