import { lookup as resolve } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';

/**
 * Which addresses Gatehouse connects to on the word of someone else (docs/adr/0037-signed-webhooks.md#ssrf-rule): a
 * webhook's URL, a trusted issuer's discovery document, key set and token endpoint (docs/federation.md#discovery).
 * Public unicast only; outside production loopback too, so that tests and local trials can answer on this machine.
 * IPv4-mapped, IPv4-compatible, NAT64 and 6to4 IPv6 addresses are judged by the IPv4 address they carry.
 */
export type AddressKind = 'public' | 'unspecified' | 'loopback' | 'private' | 'link-local' | 'multicast' | 'reserved';

type Range = readonly [prefix: readonly number[], bits: number, kind: Exclude<AddressKind, 'public'>];

const IPV4_RANGES: readonly Range[] = [
  [[0], 8, 'unspecified'], // "this network", 0.0.0.0 included
  [[10], 8, 'private'],
  [[100, 64], 10, 'private'], // shared address space (carrier-grade NAT)
  [[127], 8, 'loopback'],
  [[169, 254], 16, 'link-local'],
  [[172, 16], 12, 'private'],
  [[192, 0, 0], 24, 'reserved'], // IETF protocol assignments
  [[192, 0, 2], 24, 'reserved'], // documentation
  [[192, 88, 99], 24, 'reserved'], // 6to4 relay anycast (deprecated)
  [[192, 168], 16, 'private'],
  [[198, 18], 15, 'reserved'], // benchmarking
  [[198, 51, 100], 24, 'reserved'], // documentation
  [[203, 0, 113], 24, 'reserved'], // documentation
  [[224], 4, 'multicast'],
  [[240], 4, 'reserved'], // future use, and 255.255.255.255 (broadcast)
];

/** Exact IPv6 ranges, checked before the rule that only 2000::/3 is global unicast. */
const IPV6_RANGES: readonly Range[] = [
  [[0, 0x64, 0xff, 0x9b, 0, 1], 48, 'private'], // local-use NAT64
  [[0xfc], 7, 'private'], // unique local
  [[0xfe, 0x80], 10, 'link-local'],
  [[0xfe, 0xc0], 10, 'private'], // site-local (deprecated)
  [[0xff], 8, 'multicast'],
  [[0x20, 0x01, 0, 0], 32, 'reserved'], // Teredo: the IPv4 address it hides is not checked
  [[0x20, 0x01, 0, 2, 0, 0], 48, 'reserved'], // benchmarking
  [[0x20, 0x01, 0x0d, 0xb8], 32, 'reserved'], // documentation
  [[0x3f, 0xff], 20, 'reserved'], // documentation
];

function within(bytes: readonly number[], [prefix, bits]: Range): boolean {
  for (let bit = 0; bit < bits; bit += 8) {
    const mask = bits - bit >= 8 ? 0xff : (0xff << (8 - (bits - bit))) & 0xff;
    if ((bytes[bit / 8] & mask) !== ((prefix[bit / 8] ?? 0) & mask)) return false;
  }
  return true;
}

function ipv4Kind(bytes: readonly number[]): AddressKind {
  return IPV4_RANGES.find((range) => within(bytes, range))?.[2] ?? 'public';
}

/** The 16 bytes of an IPv6 address as node:net accepts it (a zone id, and a dotted IPv4 tail, allowed). */
export function ipv6Bytes(address: string): number[] {
  const text = address.replace(/%.*$/, '');
  const groupsOf = (part: string): number[] => {
    if (part === '') return [];
    return part.split(':').flatMap((group) => {
      if (group.includes('.')) {
        const [a, b, c, d] = group.split('.').map(Number);
        return [(a << 8) | b, (c << 8) | d];
      }
      return [parseInt(group, 16)];
    });
  };
  const [head, tail] = text.split('::');
  const left = groupsOf(head);
  const right = tail === undefined ? [] : groupsOf(tail);
  const groups = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  return groups.flatMap((group) => [group >> 8, group & 0xff]);
}

function ipv6Kind(bytes: readonly number[]): AddressKind {
  const zeros = (from: number, to: number): boolean => bytes.slice(from, to).every((byte) => byte === 0);
  if (zeros(0, 15)) return bytes[15] === 0 ? 'unspecified' : bytes[15] === 1 ? 'loopback' : 'reserved';
  // ::ffff:a.b.c.d (mapped), ::ffff:0:a.b.c.d (translated), ::a.b.c.d (compatible), 64:ff9b::a.b.c.d (NAT64).
  const mapped = zeros(0, 10) && bytes[10] === 0xff && bytes[11] === 0xff;
  const translated = zeros(0, 8) && bytes[8] === 0xff && bytes[9] === 0xff && zeros(10, 12);
  const nat64 = bytes[0] === 0 && bytes[1] === 0x64 && bytes[2] === 0xff && bytes[3] === 0x9b && zeros(4, 12);
  if (mapped || translated || zeros(0, 12) || nat64) return ipv4Kind(bytes.slice(12));
  if (bytes[0] === 0x20 && bytes[1] === 0x02) return ipv4Kind(bytes.slice(2, 6)); // 6to4
  const kind = IPV6_RANGES.find((range) => within(bytes, range))?.[2];
  if (kind !== undefined) return kind;
  return (bytes[0] & 0xe0) === 0x20 ? 'public' : 'reserved'; // global unicast is 2000::/3
}

/** What kind of address this is; undefined when it is not an IP address. URL hosts may keep their brackets. */
export function addressKind(address: string): AddressKind | undefined {
  const text = address.startsWith('[') && address.endsWith(']') ? address.slice(1, -1) : address;
  switch (isIP(text.replace(/%.*$/, ''))) {
    case 4:
      return ipv4Kind(text.split('.').map(Number));
    case 6:
      return ipv6Kind(ipv6Bytes(text));
    default:
      return undefined;
  }
}

/**
 * The private networks an operator lets Gatehouse call for one purpose (an identity provider on the company's network,
 * IDENTITY_PROVIDER_NETWORKS): an address in them that is `private` may be called; loopback, link-local (cloud
 * metadata), multicast and reserved addresses stay refused whatever the list says.
 */
export interface PrivateNetworks {
  allows(address: string): boolean;
}

/**
 * Whether Gatehouse may connect to this address: public, loopback where `allowLoopback` (outside production), or
 * private and in `privateNetworks`.
 */
export function mayConnectTo(address: string, allowLoopback: boolean, privateNetworks?: PrivateNetworks): boolean {
  const kind = addressKind(address);
  return (
    kind === 'public' ||
    (allowLoopback && kind === 'loopback') ||
    (kind === 'private' && privateNetworks !== undefined && privateNetworks.allows(address.replace(/^\[|\]$/g, '')))
  );
}

/** `localhost` and its subdomains always mean this machine (RFC 6761). */
function isLocalhostName(hostname: string): boolean {
  return hostname === 'localhost' || hostname.endsWith('.localhost');
}

/**
 * Why Gatehouse may not call `url`, before any look-up: `not_https` (http only to loopback, outside production), or
 * `address` (an IP literal, or `localhost`, that the connection would refuse anyway); null when it may be tried. A
 * host name is resolved and checked when connecting ({@link guardedLookup}).
 */
export function outboundUrlProblem(
  url: URL,
  production: boolean,
  privateNetworks?: PrivateNetworks,
): 'not_https' | 'address' | null {
  const kind = isLocalhostName(url.hostname) ? 'loopback' : addressKind(url.hostname);
  const loopback = kind === 'loopback';
  if (url.protocol === 'http:' && (production || !loopback)) return 'not_https';
  if (kind === 'private' && privateNetworks?.allows(url.hostname.replace(/^\[|\]$/g, '')) === true) return null;
  if (kind !== undefined && kind !== 'public' && (production || !loopback)) return 'address';
  return null;
}

/** Every address a host name resolved to that may not be called (docs/adr/0037-signed-webhooks.md#ssrf-rule). */
export class AddressRefused extends Error {
  readonly code = 'EADDRREFUSED';
  constructor() {
    super('address not allowed');
    this.name = 'AddressRefused';
  }
}

/**
 * A `lookup` for node:http(s): the name is resolved once, refused when any of its addresses may not be called, and the
 * socket connects to the addresses checked here; nothing resolves the name a second time, so a DNS answer that
 * changes between the check and the connection (rebinding) cannot reach a refused address.
 */
export function guardedLookup(allowLoopback: boolean, privateNetworks?: PrivateNetworks): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { all: true, family: options.family, hints: options.hints }, (error, addresses) => {
      if (error !== null) return callback(error, '', 0);
      if (
        addresses.length === 0 ||
        addresses.some(({ address }) => !mayConnectTo(address, allowLoopback, privateNetworks))
      ) {
        return callback(new AddressRefused(), '', 0);
      }
      if (options.all === true) return callback(null, addresses);
      return callback(null, addresses[0].address, addresses[0].family);
    });
  };
}
