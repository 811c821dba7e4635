import { Inject, Module, OnApplicationShutdown } from '@nestjs/common';
import { APP_CONFIG } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { FAILURE_COUNTER, FailureCounter, MemoryFailureCounter } from './failure-counter';
import { RedisFailureCounter } from './redis-failure-counter';

/** REDIS_URL set: counters shared by every instance; otherwise this process's memory. */
export async function createFailureCounter(config: AppConfiguration): Promise<FailureCounter> {
  if (config.redisUrl === undefined) return new MemoryFailureCounter();
  const counter = new RedisFailureCounter(config.redisUrl, config.redisKeyPrefix);
  await counter.connect();
  return counter;
}

/** One set of rate-limit counters per process (one Redis connection with REDIS_URL). */
@Module({
  providers: [{ provide: FAILURE_COUNTER, useFactory: createFailureCounter, inject: [APP_CONFIG] }],
  exports: [FAILURE_COUNTER],
})
export class RateLimitStorageModule implements OnApplicationShutdown {
  constructor(@Inject(FAILURE_COUNTER) private readonly counter: FailureCounter) {}

  onApplicationShutdown(): Promise<void> {
    return this.counter.close();
  }
}
