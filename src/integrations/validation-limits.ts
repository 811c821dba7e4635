import { Inject, Injectable } from '@nestjs/common';
import { tooManyRequests } from '../common/errors';
import { FAILURE_COUNTER, FailureCounter, FailureSlot } from '../common/failure-counter';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Metrics } from '../metrics/metrics';

const MINUTE_MS = 60_000;

/** A validation makes up to fourteen provider calls with retries, hence limits (docs/integrations.md#limits). */
@Injectable()
export class ValidationLimits {
  private readonly perMinute: number;
  private readonly maxConcurrent: number;
  private running = 0;

  constructor(
    @InjectConfig() config: AppConfiguration,
    @Inject(FAILURE_COUNTER) private readonly counter: FailureCounter,
    private readonly metrics: Metrics,
  ) {
    this.perMinute = config.integrations.validationsPerMinute;
    this.maxConcurrent = config.integrations.maxConcurrentValidations;
  }

  async admit(organizationId: string): Promise<() => void> {
    if (this.running >= this.maxConcurrent) {
      this.metrics.rateLimited('validations_concurrent');
      throw tooManyRequests('too_many_validations', 1000);
    }
    this.running += 1;
    let released = false;
    const release = (): void => {
      if (released) return;
      released = true;
      this.running -= 1;
    };
    try {
      const slot = await this.takeSlot(`monitoring-validations:org:${organizationId}`);
      if (!slot.granted) {
        this.metrics.rateLimited('validations_per_organization');
        throw tooManyRequests('too_many_validations', slot.resetsInMs);
      }
    } catch (error) {
      release();
      throw error;
    }
    return release;
  }

  /** One of the organization's validations of the current window; a validation keeps its slot. */
  private takeSlot(key: string): Promise<FailureSlot> {
    return this.counter.reserve(key, this.perMinute, MINUTE_MS);
  }
}
