import { isIPv4, isIPv6 } from 'node:net';

/**
 * IPv4 and IPv6 networks in CIDR notation: an API key's client-address allowlist (docs/api.md#allowlists-and-rate-limits).
 * A network is held as 32-bit words (one for IPv4, four for IPv6) with its host bits zeroed, so that the check of an
 * address is a few integer comparisons.
 */
export interface Network {
  v6: boolean;
  /** The address with its host bits zeroed: one word (IPv4) or four (IPv6), most significant first. */
  words: number[];
  prefix: number;
}

/** The IPv4 networks that an IPv4-mapped IPv6 address (::ffff:a.b.c.d) stands for. */
const MAPPED = /^::ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/i;
const PREFIX = /^(0|[1-9]\d{0,2})$/;

/** The 32-bit word of a valid IPv4 address (isIPv4 checked), read without allocating: the hot paths call it. */
function ipv4Word(address: string): number {
  let word = 0;
  let octet = 0;
  for (let i = 0; i < address.length; i += 1) {
    const code = address.charCodeAt(i);
    if (code === 46) {
      word = (word << 8) | octet;
      octet = 0;
    } else {
      octet = octet * 10 + (code - 48);
    }
  }
  return ((word << 8) | octet) >>> 0;
}

/** Four words of a valid IPv6 address (isIPv6 checked), without a zone. */
function ipv6Words(address: string): number[] {
  let text = address.toLowerCase();
  let tail: number[] = [];
  // An IPv4 tail (::ffff:1.2.3.4, 64:ff9b::1.2.3.4) is the last two groups.
  const dot = text.lastIndexOf(':');
  if (text.includes('.', dot)) {
    const word = ipv4Word(text.slice(dot + 1));
    tail = [word >>> 16, word & 0xffff];
    // Without the IPv4 part: `::ffff:` becomes `::ffff`, `::` and `64:ff9b::` stay.
    text = text.slice(0, dot + 1);
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

/** The mask of the `bits` leading bits of a 32-bit word. */
function mask(bits: number): number {
  return bits <= 0 ? 0 : bits >= 32 ? 0xffffffff : (0xffffffff << (32 - bits)) >>> 0;
}

function zeroHostBits(words: number[], prefix: number): number[] {
  return words.map((word, i) => (word & mask(prefix - 32 * i)) >>> 0);
}

/**
 * A CIDR (`10.0.0.0/8`, `2001:db8::/32`) or a single address (a /32 or /128), or null when it is neither. The host
 * bits are zeroed (`10.1.2.3/8` is `10.0.0.0/8`); an IPv4-mapped IPv6 network of /96 or longer is the IPv4 network it
 * stands for. No zone, no spaces, no leading zeros in the prefix.
 */
export function parseCidr(text: string): Network | null {
  if (typeof text !== 'string' || text.length > 64) return null;
  const slash = text.indexOf('/');
  const address = slash === -1 ? text : text.slice(0, slash);
  const prefixText = slash === -1 ? undefined : text.slice(slash + 1);
  if (prefixText !== undefined && !PREFIX.test(prefixText)) return null;
  if (isIPv4(address)) {
    const prefix = prefixText === undefined ? 32 : Number(prefixText);
    if (prefix > 32) return null;
    return { v6: false, words: zeroHostBits([ipv4Word(address)], prefix), prefix };
  }
  if (!isIPv6(address) || address.includes('%')) return null;
  const prefix = prefixText === undefined ? 128 : Number(prefixText);
  if (prefix > 128) return null;
  const words = ipv6Words(address);
  if (prefix >= 96 && words[0] === 0 && words[1] === 0 && words[2] === 0xffff) {
    return { v6: false, words: zeroHostBits([words[3]], prefix - 96), prefix: prefix - 96 };
  }
  return { v6: true, words: zeroHostBits(words, prefix), prefix };
}

/** RFC 5952 text: lower case, the longest run of two or more zero groups written `::` (the first of equals). */
function formatIpv6(words: number[]): string {
  const groups = words.flatMap((word) => [word >>> 16, word & 0xffff]);
  let bestStart = -1;
  let bestLength = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) {
      i += 1;
      continue;
    }
    let j = i;
    while (j < 8 && groups[j] === 0) j += 1;
    if (j - i > bestLength) [bestStart, bestLength] = [i, j - i];
    i = j;
  }
  const hex = (part: number[]) => part.map((group) => group.toString(16)).join(':');
  if (bestStart === -1) return hex(groups);
  return `${hex(groups.slice(0, bestStart))}::${hex(groups.slice(bestStart + bestLength))}`;
}

export function formatCidr(network: Network): string {
  if (!network.v6) {
    const word = network.words[0];
    return `${word >>> 24}.${(word >>> 16) & 255}.${(word >>> 8) & 255}.${word & 255}/${network.prefix}`;
  }
  return `${formatIpv6(network.words)}/${network.prefix}`;
}

/** The canonical text of a CIDR or address (always with its prefix), or null when it is not one. */
export function normalizeCidr(text: string): string | null {
  const network = parseCidr(text);
  return network === null ? null : formatCidr(network);
}

/** A client address as words: IPv4 (an IPv4-mapped IPv6 address included) or IPv6; null when not an address. */
function addressWords(address: string): { v6: boolean; words: number[] } | null {
  if (isIPv4(address)) return { v6: false, words: [ipv4Word(address)] };
  const mapped = MAPPED.exec(address);
  if (mapped !== null && isIPv4(mapped[1])) return { v6: false, words: [ipv4Word(mapped[1])] };
  const unzoned = address.split('%')[0];
  if (!isIPv6(unzoned)) return null;
  return { v6: true, words: ipv6Words(unzoned) };
}

/** Networks an address is checked against; built once per stored list (allowList). */
export class AddressList {
  private readonly v4: Array<[number, number]> = [];
  private readonly v6: Network[] = [];

  constructor(readonly networks: readonly Network[]) {
    for (const network of networks) {
      if (network.v6) this.v6.push(network);
      else this.v4.push([network.words[0], mask(network.prefix)]);
    }
  }

  /** Whether the address is in one of the networks; an unknown address (undefined, not an IP) never is. */
  allows(address: string | undefined): boolean {
    if (address === undefined) return false;
    if (isIPv4(address)) {
      // The common case, without an allocation.
      const word = ipv4Word(address);
      for (const [network, bits] of this.v4) if ((word & bits) >>> 0 === network) return true;
      return false;
    }
    const parsed = addressWords(address);
    if (parsed === null) return false;
    const { words } = parsed;
    if (!parsed.v6) {
      for (const [network, bits] of this.v4) if ((words[0] & bits) >>> 0 === network) return true;
      return false;
    }
    for (const network of this.v6) {
      let inside = true;
      for (let i = 0; i < 4 && inside; i += 1) {
        inside = (words[i] & mask(network.prefix - 32 * i)) >>> 0 === network.words[i];
      }
      if (inside) return true;
    }
    return false;
  }
}

/** Compiled lists, by their stored text: the hot paths parse a key's list once, not per request. */
const compiled = new Map<string, AddressList>();
const COMPILED_MAX = 10_000;

/**
 * The allowlist stored as `normalized,normalized,...` (ApiKey.allowedCidrs' column), compiled once and remembered.
 * Entries that do not parse (none are stored) are left out, so a bad entry allows nothing.
 */
export function allowList(stored: string): AddressList {
  let list = compiled.get(stored);
  if (list === undefined) {
    const networks = stored.split(',').flatMap((entry) => parseCidr(entry) ?? []);
    list = new AddressList(networks);
    if (compiled.size >= COMPILED_MAX) compiled.delete(compiled.keys().next().value!);
    compiled.set(stored, list);
  }
  return list;
}

/** Which whole address families a list of networks covers (coveredFamilies). */
export interface Coverage {
  /** Every IPv4 address is inside one of the networks. */
  ipv4: boolean;
  /** Every IPv6 address is, the IPv4-mapped ones (::ffff:0:0/96, checked as IPv4) aside. */
  ipv6: boolean;
}

const ALL_128 = (1n << 128n) - 1n;
/** ::ffff:0:0/96, where an IPv4 network lives in the one 128-bit space coveredFamilies merges in. */
const MAPPED_FIRST = 0xffffn << 32n;
const MAPPED_LAST = MAPPED_FIRST + 0xffffffffn;

/** A network's first and last address in the 128-bit space, an IPv4 network as its IPv4-mapped range. */
function span(network: Network): [bigint, bigint] {
  const first = network.v6
    ? network.words.reduce((value, word) => (value << 32n) | BigInt(word), 0n)
    : MAPPED_FIRST | BigInt(network.words[0]);
  const size = 1n << BigInt((network.v6 ? 128 : 32) - network.prefix);
  return [first, first + size - 1n];
}

/** Whether the union of the spans (merged, whatever their order, overlaps and sizes) covers [first, last]. */
function covers(spans: ReadonlyArray<readonly [bigint, bigint]>, first: bigint, last: bigint): boolean {
  let next = first;
  for (const [low, high] of [...spans].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    if (low > next) break;
    if (high >= next) next = high + 1n;
    if (next > last) return true;
  }
  return false;
}

/**
 * Whether the networks together cover every IPv4 address, or every IPv6 address: computed on their merged ranges, not
 * on prefix lengths, so `0.0.0.0/1` + `128.0.0.0/1`, 256 /8s or overlapping ranges count as a /0. As AddressList (and
 * the verifier) checks an address, IPv4 networks count for IPv4 and IPv6 networks for IPv6, and the IPv4-mapped range
 * (::ffff:0:0/96, whose addresses are checked as IPv4) counts as covered for IPv6: a list that leaves out only that
 * range allows every IPv6 client.
 */
export function coveredFamilies(networks: readonly Network[]): Coverage {
  const spans = networks.map(span);
  return {
    ipv4: covers(
      spans.filter((_, i) => !networks[i].v6),
      MAPPED_FIRST,
      MAPPED_LAST,
    ),
    ipv6: covers([...spans.filter((_, i) => networks[i].v6), [MAPPED_FIRST, MAPPED_LAST]], 0n, ALL_128),
  };
}
