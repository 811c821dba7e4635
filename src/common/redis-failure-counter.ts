import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { FailureCounter, FailureSlot, MemoryFailureCounter } from './failure-counter';

/**
 * Atomic so concurrent instances neither lose counts, share the last slot, nor leave a counter without expiry (which
 * would block an address for good).
 */
const RESERVE_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
if count > tonumber(ARGV[2]) then
  redis.call('DECR', KEYS[1])
  return {0, ttl, 0}
end
return {1, ttl, tonumber(ARGV[2]) - count}
`;

/** A window that closed meanwhile is not recreated. */
const RELEASE_SCRIPT = `
if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
if redis.call('DECR', KEYS[1]) <= 0 then redis.call('DEL', KEYS[1]) end
return 1
`;

interface ScriptedRedis extends Redis {
  gatehouseReserveSlot(key: string, windowMs: number, limit: number): Promise<[number, number, number]>;
  gatehouseReleaseSlot(key: string): Promise<number>;
}

/** Attempt counters shared by every instance through Redis (REDIS_URL). */
export class RedisFailureCounter implements FailureCounter {
  private readonly logger = new Logger('TokenAttemptLimiter');
  private readonly redis: ScriptedRedis;
  private readonly fallback = new MemoryFailureCounter();
  private degraded = false;

  constructor(
    url: string,
    private readonly prefix: string,
    commandTimeoutMs = 500,
  ) {
    this.redis = new Redis(url, {
      lazyConnect: true,
      // Fail at once while disconnected (and use the fallback) rather than queue the request.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      connectTimeout: 2000,
      commandTimeout: commandTimeoutMs,
    }) as ScriptedRedis;
    this.redis.defineCommand('gatehouseReserveSlot', { numberOfKeys: 1, lua: RESERVE_SCRIPT });
    this.redis.defineCommand('gatehouseReleaseSlot', { numberOfKeys: 1, lua: RELEASE_SCRIPT });
    // Never log the URL: it may carry a password.
    this.redis.on('error', (error: Error) => this.degrade(error));
    this.redis.on('ready', () => {
      if (this.degraded) this.logger.log('redis reachable again; rate-limit counters are shared again');
      this.degraded = false;
    });
  }

  /** On failure carries on with the fallback; ioredis keeps reconnecting in the background. */
  async connect(): Promise<void> {
    try {
      await this.redis.connect();
    } catch (error) {
      this.degrade(error as Error);
    }
  }

  async reserve(key: string, limit: number, windowMs: number): Promise<FailureSlot> {
    let granted: number;
    let ttl: number;
    let remaining: number;
    try {
      [granted, ttl, remaining] = await this.redis.gatehouseReserveSlot(this.prefix + key, windowMs, limit);
    } catch (error) {
      this.degrade(error as Error);
      return this.fallback.reserve(key, limit, windowMs);
    }
    if (Number(granted) !== 1) {
      return { granted: false, resetsInMs: Number(ttl), remaining: 0, release: () => undefined };
    }
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      // If Redis is gone by now the slot stays counted until its window closes: one failure too many, never too few.
      this.redis.gatehouseReleaseSlot(this.prefix + key).catch((error: Error) => this.degrade(error));
    };
    return { granted: true, resetsInMs: Number(ttl), remaining: Number(remaining), release };
  }

  async close(): Promise<void> {
    await this.fallback.close();
    if (this.redis.status === 'ready') await this.redis.quit();
    else this.redis.disconnect();
  }

  /** Logs the first failure of an outage, not every request during it. */
  private degrade(error: Error): void {
    if (this.degraded) return;
    this.degraded = true;
    this.logger.warn(
      { err: { type: error.name, message: error.message } },
      'redis unreachable; rate-limit counters are per instance until it is back',
    );
  }
}
