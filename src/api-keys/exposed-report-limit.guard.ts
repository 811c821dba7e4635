import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { clientAddress, clientNetwork } from '../common/client-address';
import { tooManyRequests } from '../common/errors';
import { FAILURE_COUNTER, FailureCounter } from '../common/failure-counter';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Metrics } from '../metrics/metrics';

const HOUR_MS = 3_600_000;

/**
 * At most EXPOSED_REPORTS_PER_HOUR requests to POST /v1/api-keys/exposed per client address (IPv6
 * per /64) in a fixed window of an hour, counted in the rate-limit counters (memory, or Redis shared
 * by every instance with REDIS_URL). Every request that reaches the route takes a slot and keeps it,
 * whatever its body; past the limit it is 429 with Retry-After before the body is validated and
 * before any database work (docs/api.md#post-v1api-keysexposed).
 */
@Injectable()
export class ExposedReportLimitGuard implements CanActivate {
  private readonly perHour: number;

  constructor(
    @InjectConfig() config: AppConfiguration,
    @Inject(FAILURE_COUNTER) private readonly counter: FailureCounter,
    private readonly metrics: Metrics,
  ) {
    this.perHour = config.rateLimit.exposedReportsPerHour;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const network = clientNetwork(clientAddress(context.switchToHttp().getRequest<Request>()));
    const slot = await this.counter.reserve(`exposed-reports:addr:${network}`, this.perHour, HOUR_MS);
    if (!slot.granted) {
      this.metrics.rateLimited('exposed_reports');
      throw tooManyRequests(slot.resetsInMs);
    }
    return true;
  }
}
