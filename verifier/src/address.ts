import { isIPv4, isIPv6 } from 'node:net';

/**
 * Client addresses and CIDR allowlists: a token whose API key has an allowlist carries it in `allowed_cidrs`, and is
 * accepted only for a request from an address inside it (Gatehouse's docs/resource-servers.md#allowlists-and-rate-limits).
 * Gatehouse writes the claim normalized (host bits zeroed, IPv6 in RFC 5952 form); any CIDR or address is read here.
 */

interface Address {
  v6: boolean;
  /** One 32-bit word (IPv4) or four (IPv6), most significant first. */
  words: number[];
}

interface Network extends Address {
  prefix: number;
}

const MAPPED = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;

function ipv4Word(address: string): number {
  const [a, b, c, d] = address.split('.').map(Number);
  return ((a << 24) | (b << 16) | (c << 8) | d) >>> 0;
}

/** A valid IPv6 address (isIPv6 checked, no zone) as four words. */
function ipv6Words(address: string): number[] {
  let text = address.toLowerCase();
  let tail: number[] = [];
  const colon = text.lastIndexOf(':');
  if (text.includes('.', colon)) {
    const word = ipv4Word(text.slice(colon + 1));
    tail = [word >>> 16, word & 0xffff];
    text = text.slice(0, colon + 1);
    if (!text.endsWith('::')) text = text.slice(0, -1);
  }
  const [head, rest] = text.split('::');
  const left = head === '' ? [] : head.split(':').map((group) => parseInt(group, 16));
  const right = rest === undefined || rest === '' ? [] : rest.split(':').map((group) => parseInt(group, 16));
  const groups =
    rest === undefined
      ? [...left, ...tail]
      : [...left, ...Array<number>(8 - left.length - right.length - tail.length).fill(0), ...right, ...tail];
  return [0, 1, 2, 3].map((i) => ((groups[2 * i] << 16) | groups[2 * i + 1]) >>> 0);
}

/** An address (an IPv4-mapped IPv6 one as IPv4), or undefined when the text is not one. */
export function parseAddress(text: string): Address | undefined {
  if (isIPv4(text)) return { v6: false, words: [ipv4Word(text)] };
  const mapped = MAPPED.exec(text);
  if (mapped !== null && isIPv4(mapped[1])) return { v6: false, words: [ipv4Word(mapped[1])] };
  const unzoned = text.split('%')[0];
  return isIPv6(unzoned) ? { v6: true, words: ipv6Words(unzoned) } : undefined;
}

/** `a.b.c.d/n`, `x::/n` or a single address; undefined when the text is none of them. */
export function parseNetwork(text: string): Network | undefined {
  const slash = text.indexOf('/');
  const address = parseAddress(slash === -1 ? text : text.slice(0, slash));
  if (address === undefined) return undefined;
  const bits = address.v6 ? 128 : 32;
  const prefixText = slash === -1 ? String(bits) : text.slice(slash + 1);
  if (!/^\d{1,3}$/.test(prefixText)) return undefined;
  let prefix = Number(prefixText);
  // An IPv4-mapped network written in IPv6 (::ffff:10.0.0.0/104) was parsed as IPv4: its prefix counts from bit 96.
  if (!address.v6 && text.includes(':')) prefix -= 96;
  if (prefix < 0 || prefix > bits) return undefined;
  return { ...address, prefix };
}

function mask(bits: number): number {
  return bits <= 0 ? 0 : bits >= 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
}

function inside(address: Address, network: Network): boolean {
  if (address.v6 !== network.v6) return false;
  return address.words.every(
    (word, i) =>
      (word & mask(network.prefix - 32 * i)) >>> 0 === (network.words[i] & mask(network.prefix - 32 * i)) >>> 0,
  );
}

/** Networks an address is checked against. */
export class AddressList {
  private readonly networks: Network[] = [];
  /** The entries that are neither a CIDR nor an address: left out, so such an entry allows nothing. */
  readonly invalid: string[] = [];

  constructor(entries: readonly string[]) {
    for (const entry of entries) {
      const network = parseNetwork(entry.trim());
      if (network === undefined) this.invalid.push(entry);
      else this.networks.push(network);
    }
  }

  /** Whether the address (text, as a request's) is inside one of the networks; an unknown one never is. */
  allows(address: string | undefined): boolean {
    const parsed = address === undefined ? undefined : parseAddress(address);
    return parsed !== undefined && this.networks.some((network) => inside(parsed, network));
  }
}

/**
 * The client address of a request, as a reverse proxy tells it (the way Express's `trust proxy` with a list of
 * addresses reads it): the peer, unless it is a trusted proxy; then, from the right, each X-Forwarded-For entry added
 * by a trusted proxy is passed over, and the first one that was not is the client. Without trusted proxies, the peer.
 */
export function requestAddress(
  peer: string | undefined,
  forwardedFor: string | string[] | undefined,
  trustedProxies: AddressList | undefined,
): string | undefined {
  let address = peer === undefined ? undefined : normalizeText(peer);
  if (trustedProxies === undefined || address === undefined) return address;
  const hops = (Array.isArray(forwardedFor) ? forwardedFor.join(',') : (forwardedFor ?? ''))
    .split(',')
    .map((entry) => entry.trim())
    .filter((entry) => entry !== '');
  while (trustedProxies.allows(address) && hops.length > 0) {
    const next = hops.pop()!;
    if (parseAddress(next) === undefined) return undefined;
    address = normalizeText(next);
  }
  return address;
}

/** `::ffff:1.2.3.4` (a dual-stack socket's IPv4 peer) as `1.2.3.4`. */
function normalizeText(address: string): string {
  const mapped = MAPPED.exec(address);
  return mapped !== null && isIPv4(mapped[1]) ? mapped[1] : address;
}
