import { isIP } from 'node:net';
import { addressKind } from '../../common/address-rules';
import { AddressList, formatCidr, parseCidr } from '../../common/cidr';
import { isLoopbackHost, type Reader } from '../reader';

/** Where the service listens, whom it trusts for client addresses, and where browsers reach it. */
export interface NetworkSettings {
  /** NODE_ENV was not set: a local development run, on loopback only. */
  environmentUnset: boolean;
  host: string;
  port: number;
  /** Express `trust proxy`: false, true, a number of hops, or addresses / subnets / loopback etc. */
  trustProxy: boolean | number | string;
  redisUrl: string | undefined;
}

export function parseNetwork(r: Reader, production: boolean): NetworkSettings {
  const redisUrl = r.string('REDIS_URL');
  if (redisUrl !== undefined && !/^rediss?:\/\/[^\s]+$/.test(redisUrl)) {
    r.problem('REDIS_URL must be a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379');
  }
  const trustProxy = parseTrustProxy(r, r.string('TRUST_PROXY'));
  // `true` takes the left-most X-Forwarded-For entry, which any client can write (docs/operations.md#client-address).
  if (trustProxy === true && production) {
    r.problem(
      'TRUST_PROXY=true is refused when NODE_ENV=production: it trusts any X-Forwarded-For a client sends; set the number of proxy hops in front of the service (e.g. 1) or their addresses or subnets',
    );
  }
  const port = r.int('PORT', 3000, 0, 65535);
  // Unset NODE_ENV: loopback only, so a deployment that forgot it never serves development's defaults (operations.md#node_env).
  const environmentUnset = (r.env.NODE_ENV ?? '') === '';
  const host = r.string('HOST', environmentUnset ? '127.0.0.1' : '0.0.0.0')!;
  if (environmentUnset && !isLoopbackHost(host.includes(':') ? `[${host}]` : host)) {
    r.problem(
      `HOST=${host} listens beyond this machine, but NODE_ENV is not set: set NODE_ENV=production for a deployment (or NODE_ENV=development to run a development server on the network)`,
    );
  }
  return { environmentUnset, host, port, trustProxy, redisUrl };
}

const TRUST_PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/** Express reads "1" as the address 0.0.0.1 and fails on "true": numbers and names are checked here. */
function parseTrustProxy(r: Reader, raw: string | undefined): boolean | number | string {
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const valid = raw.split(',').every((entry) => {
    const [address, prefix, ...rest] = entry.trim().split('/');
    if (rest.length > 0) return false;
    if (TRUST_PROXY_NAMES.has(address)) return prefix === undefined;
    const version = isIP(address);
    return (
      version !== 0 &&
      (prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128)))
    );
  });
  if (!valid) {
    r.problem(
      'TRUST_PROXY must be true, false, a number of hops, or a comma-separated list of addresses, subnets, loopback, linklocal or uniquelocal',
    );
    return false;
  }
  return raw;
}

/** METRICS_PORT (a port, 0 for any free one, or `off`) and METRICS_HOST (loopback unless opened): operations.md#metrics. */
export function parseMetrics(r: Reader, publicPort: number): { enabled: boolean; host: string; port: number } {
  const host = r.string('METRICS_HOST', '127.0.0.1')!;
  if (host !== 'localhost' && isIP(host) === 0) {
    r.problem('METRICS_HOST must be an IP address (e.g. 127.0.0.1, 0.0.0.0 or ::) or localhost');
  }
  const raw = r.string('METRICS_PORT');
  if (raw === 'off') return { enabled: false, host, port: 0 };
  const port = raw === undefined ? 9464 : Number(raw);
  if (raw !== undefined && (!/^\d{1,5}$/.test(raw) || port > 65535)) {
    r.problem(`METRICS_PORT must be a port from 0 to 65535, or off (got "${raw}")`);
  } else if (port !== 0 && port === publicPort) {
    r.problem('METRICS_PORT must differ from PORT: metrics are never served on the public port');
  }
  return { enabled: true, host, port };
}

/** An absolute http(s) URL without credentials, query or fragment; undefined when `raw` is not one. */
function plainHttpUrl(raw: string): URL | undefined {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    return undefined;
  }
  const plain =
    ['http:', 'https:'].includes(url.protocol) &&
    url.username === '' &&
    url.password === '' &&
    !raw.includes('?') &&
    !raw.includes('#');
  return plain ? url : undefined;
}

/** PUBLIC_BASE_URL: an http(s) origin, maybe with a path prefix, no query or fragment; no trailing slash. */
export function parsePublicBaseUrl(r: Reader, port: number): string {
  const raw = r.string('PUBLIC_BASE_URL');
  if (raw === undefined) return `http://localhost:${port}`;
  const url = plainHttpUrl(raw);
  if (url === undefined) {
    r.problem(
      'PUBLIC_BASE_URL must be an http(s) URL without credentials, query or fragment, e.g. https://gatehouse.example.com',
    );
    return `http://localhost:${port}`;
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

/**
 * JWT_ISSUER: an absolute http(s) URL without query or fragment, written as given (it is compared as a string);
 * by default PUBLIC_BASE_URL (itself http://localhost:<PORT> by default). https:// in production.
 */
export function parseIssuer(r: Reader, production: boolean, publicBaseUrl: string): string {
  const issuer = r.string('JWT_ISSUER', publicBaseUrl)!;
  const url = plainHttpUrl(issuer);
  if (url === undefined) {
    r.problem(
      'JWT_ISSUER must be an absolute http(s) URL without query or fragment, e.g. https://gatehouse.example.com',
    );
  } else if (production && url.protocol !== 'https:') {
    const from = r.string('JWT_ISSUER') === undefined ? ', from PUBLIC_BASE_URL' : '';
    r.problem(`JWT_ISSUER must be an https:// URL when NODE_ENV=production (got ${issuer}${from})`);
  }
  return issuer;
}

/**
 * IDENTITY_PROVIDER_NETWORKS: the private networks (comma-separated CIDRs, e.g. `10.20.0.0/16,fd00:1::/64`) where a
 * trusted issuer may be reached, for an identity provider on the company's own network. Only private ranges
 * (RFC 1918, RFC 6598, unique local IPv6) may be named: loopback, link-local (where cloud metadata answers), multicast
 * and reserved addresses are never called, whatever this says (docs/federation.md#where-gatehouse-connects).
 */
export function parseIdentityProviderNetworks(r: Reader): AddressList {
  const text = r.string('IDENTITY_PROVIDER_NETWORKS', '')!;
  const networks = [];
  for (const entry of text
    .split(',')
    .map((part) => part.trim())
    .filter((part) => part !== '')) {
    const network = parseCidr(entry);
    if (network === null) {
      r.problem(`IDENTITY_PROVIDER_NETWORKS: ${entry} is not a CIDR (e.g. 10.20.0.0/16)`);
      continue;
    }
    const first = formatCidr(network).split('/')[0];
    // A network wider than its private range (10.0.0.0/7) would name public or other addresses too.
    const privateRange = network.v6 ? network.prefix >= 7 : network.prefix >= 8;
    if (addressKind(first) !== 'private' || !privateRange) {
      r.problem(
        `IDENTITY_PROVIDER_NETWORKS: ${entry} is not within a private range (10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, 100.64.0.0/10, fc00::/7)`,
      );
      continue;
    }
    networks.push(network);
  }
  return new AddressList(networks);
}
