import { isIP, isIPv4, isIPv6 } from 'node:net';
import type { Request } from 'express';

/** The longest textual IP address: `ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255`. */
export const MAX_ADDRESS_LENGTH = 45;

export function isClientAddress(value: string | undefined | null): value is string {
  return typeof value === 'string' && value.length <= MAX_ADDRESS_LENGTH && isIP(value) !== 0;
}

/** `req.ip` (which honours TRUST_PROXY) when it is an IP address, else the peer (docs/operations.md#client-address). */
export function clientAddress(req: Pick<Request, 'ip' | 'socket'>): string | undefined {
  const ip = req.ip;
  if (isClientAddress(ip)) return ip;
  const peer = req.socket?.remoteAddress;
  return isClientAddress(peer) ? peer : undefined;
}

/** An IPv6 host usually gets a whole /64, so counting single IPv6 addresses would limit no one. */
export function clientNetwork(address: string | undefined): string {
  if (address === undefined) return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null && isIPv4(mapped[1])) return mapped[1];
  if (isIPv4(address)) return address;
  if (!isIPv6(address)) return 'unknown';
  const [head, tail = ''] = address.toLowerCase().split('%')[0].split('::');
  const left = head === '' ? [] : head.split(':');
  const right = address.includes('::') ? (tail === '' ? [] : tail.split(':')) : [];
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
