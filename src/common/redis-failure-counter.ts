import { Logger } from '@nestjs/common';
import { Redis } from 'ioredis';
import { FailureCounter, FailureWindow, MemoryFailureCounter } from './failure-counter';

/**
 * INCR and the window's expiry in one atomic step, so that concurrent failures on several instances
 * neither lose counts nor leave a counter without expiry (which would block an address for good).
 * Returns {count, milliseconds until the window closes}.
 */
const INCREMENT_SCRIPT = `
local count = redis.call('INCR', KEYS[1])
local ttl = redis.call('PTTL', KEYS[1])
if ttl < 0 then
  redis.call('PEXPIRE', KEYS[1], ARGV[1])
  ttl = tonumber(ARGV[1])
end
return {count, ttl}
`;

interface ScriptedRedis extends Redis {
  gatehouseIncrementFailure(key: string, windowMs: number): Promise<[number, number]>;
}

/**
 * Failure counters shared by every instance through Redis (REDIS_URL). While Redis cannot be
 * reached, each instance counts in its own memory instead: the limit then holds per instance
 * rather than not at all, and a Redis outage does not take POST /v1/token down with it.
 */
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
    this.redis.defineCommand('gatehouseIncrementFailure', { numberOfKeys: 1, lua: INCREMENT_SCRIPT });
    // Never log the URL: it may carry a password.
    this.redis.on('error', (error: Error) => this.degrade(error));
    this.redis.on('ready', () => {
      if (this.degraded) this.logger.log('redis reachable again; rate-limit counters are shared again');
      this.degraded = false;
    });
  }

  /** Connects, or carries on with the fallback (ioredis keeps reconnecting in the background). */
  async connect(): Promise<void> {
    try {
      await this.redis.connect();
    } catch (error) {
      this.degrade(error as Error);
    }
  }

  async peek(keys: readonly string[]): Promise<FailureWindow[]> {
    try {
      const pipeline = this.redis.pipeline();
      for (const key of keys) pipeline.get(this.prefix + key).pttl(this.prefix + key);
      const replies = (await pipeline.exec()) ?? [];
      for (const [error] of replies) if (error) throw error;
      return keys.map((_key, i) => {
        const count = Number(replies[2 * i][1] ?? 0);
        const ttl = Number(replies[2 * i + 1][1]);
        return count > 0 && ttl > 0 ? { count, resetsInMs: ttl } : { count: 0, resetsInMs: 0 };
      });
    } catch (error) {
      this.degrade(error as Error);
      return this.fallback.peek(keys);
    }
  }

  async increment(key: string, windowMs: number): Promise<FailureWindow> {
    try {
      const [count, ttl] = await this.redis.gatehouseIncrementFailure(this.prefix + key, windowMs);
      return { count: Number(count), resetsInMs: Number(ttl) };
    } catch (error) {
      this.degrade(error as Error);
      return this.fallback.increment(key, windowMs);
    }
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
