import { Inject, Injectable } from '@nestjs/common';
import type { KeyRateLimit } from '../api-keys/key-policies';
import { AppError, ErrorCode, Messages } from '../common/errors';
import { FAILURE_COUNTER, FailureCounter } from '../common/failure-counter';
import { Metrics } from '../metrics/metrics';

/**
 * The two fields of draft-ietf-httpapi-ratelimit-headers that describe a key's limit: `RateLimit-Policy` (the quota and
 * its window) and `RateLimit` (what is left of it, and the seconds until the window ends).
 */
export interface RateLimitFields {
  'RateLimit-Policy': string;
  RateLimit: string;
}

/** The policy's name in both fields: the limit is the API key's. */
const POLICY = '"api-key"';

/**
 * Per-key rate limits where Gatehouse sees each request: the exchange and forward auth (docs/api.md#allowlists-and-rate-limits).
 * A fixed window per key, counted by the failure limits' engine (FAILURE_COUNTER: Redis with REDIS_URL, shared by
 * every instance; this process's memory otherwise); a request over the limit is not counted.
 */
@Injectable()
export class KeyRequestLimiter {
  constructor(
    @Inject(FAILURE_COUNTER) private readonly counter: FailureCounter,
    private readonly metrics: Metrics,
  ) {}

  /** Counts one request of the key: the fields to answer with, or 429 with them and Retry-After past the limit. */
  async take(keyId: string, limit: KeyRateLimit): Promise<RateLimitFields> {
    // The window is part of the counter's name: a changed window starts a window of its own.
    const slot = await this.counter.reserve(
      `key-requests:${keyId}:${limit.windowSeconds}`,
      limit.requests,
      limit.windowSeconds * 1000,
    );
    const seconds = Math.max(1, Math.ceil(slot.resetsInMs / 1000));
    const fields: RateLimitFields = {
      'RateLimit-Policy': `${POLICY};q=${limit.requests};w=${limit.windowSeconds}`,
      RateLimit: `${POLICY};r=${slot.remaining};t=${seconds}`,
    };
    if (slot.granted) return fields;
    this.metrics.rateLimited('key_requests');
    throw new AppError(ErrorCode.RESOURCE_EXHAUSTED, Messages.tooManyRequests, {
      headers: { 'Retry-After': String(seconds), ...fields },
      reason: 'credential_rate_limited',
    });
  }
}
