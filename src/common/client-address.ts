import { isIP } from 'node:net';
import type { Request } from 'express';

/** The longest textual IP address: `ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255`. */
export const MAX_ADDRESS_LENGTH = 45;

/** Whether `value` is an IPv4 or IPv6 address no longer than an IPv6 address can be. */
export function isClientAddress(value: string | undefined | null): value is string {
  return typeof value === 'string' && value.length <= MAX_ADDRESS_LENGTH && isIP(value) !== 0;
}

/**
 * The client's address as the failure limiter, the audit trail and the access log know it
 * (docs/operations.md#client-address): `req.ip` (which honours TRUST_PROXY) when it is an IP
 * address, else the socket's peer. A trusted proxy hop passes on whatever X-Forwarded-For held, so
 * `req.ip` can be any text a client chose; such text never becomes a limiter key or a stored
 * address. Undefined only when neither is an address (a socket already closed).
 */
export function clientAddress(req: Pick<Request, 'ip' | 'socket'>): string | undefined {
  const ip = req.ip;
  if (isClientAddress(ip)) return ip;
  const peer = req.socket?.remoteAddress;
  return isClientAddress(peer) ? peer : undefined;
}
