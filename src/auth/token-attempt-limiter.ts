import { isIPv6 } from 'node:net';
import { Inject, Injectable } from '@nestjs/common';
import { tooManyRequests } from '../common/errors';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { FAILURE_COUNTER, FailureCounter } from '../common/failure-counter';

/**
 * Brute-force protection of POST /v1/token (docs/api.md: 429 RESOURCE_EXHAUSTED with
 * Retry-After). Only failed attempts count, per client address and per key id; once either has
 * TOKEN_FAILURE_LIMIT_PER_MINUTE failures in its window, its attempts are refused before the
 * credentials are checked, so guessing stops even with the right secret, until the window closes.
 * Successful exchanges are neither counted nor slowed.
 */
@Injectable()
export class TokenAttemptLimiter {
  private readonly limit: number;
  private readonly windowMs: number;

  constructor(
    @InjectConfig() config: AppConfiguration,
    @Inject(FAILURE_COUNTER) private readonly counter: FailureCounter,
  ) {
    this.limit = config.rateLimit.tokenFailuresPerMinute;
    this.windowMs = config.rateLimit.tokenFailureWindowSeconds * 1000;
  }

  /** Throws 429 when the address or the key id has used up its failures. */
  async check(address: string | undefined, keyId: string | undefined): Promise<void> {
    const windows = await this.counter.peek(counterKeys(address, keyId));
    const exhausted = windows.filter((window) => window.count >= this.limit);
    if (exhausted.length > 0) {
      throw tooManyRequests(Math.max(...exhausted.map((window) => window.resetsInMs)));
    }
  }

  /** Counts one failed attempt against the address and, when the value named one, the key id. */
  async recordFailure(address: string | undefined, keyId: string | undefined): Promise<void> {
    await Promise.all(counterKeys(address, keyId).map((key) => this.counter.increment(key, this.windowMs)));
  }
}

export { tooManyRequests };

function counterKeys(address: string | undefined, keyId: string | undefined): string[] {
  const keys = [`token-failures:addr:${clientNetwork(address)}`];
  if (keyId !== undefined) keys.push(`token-failures:key:${keyId}`);
  return keys;
}

/**
 * What one client controls: an IPv4 address, or the /64 of an IPv6 address (a single host is
 * usually handed a whole /64, so counting single IPv6 addresses would not limit anyone).
 */
export function clientNetwork(address: string | undefined): string {
  if (address === undefined || address === '') return 'unknown';
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped !== null) return mapped[1];
  if (!isIPv6(address)) return address;
  const [head, tail = ''] = address.toLowerCase().split('%')[0].split('::');
  const left = head === '' ? [] : head.split(':');
  const right = address.includes('::') ? (tail === '' ? [] : tail.split(':')) : [];
  const groups = [...left, ...Array<string>(8 - left.length - right.length).fill('0'), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ''))
    .join(':')}::/64`;
}
