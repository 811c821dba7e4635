import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { clientAddress, clientNetwork } from '../../common/client-address';
import { tooManyRequests } from '../../common/errors';
import { FAILURE_COUNTER, FailureCounter } from '../../common/failure-counter';
import type { LargeBodyRoute } from '../../common/json-body';
import { InjectConfig } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import { Metrics } from '../../metrics/metrics';

const HOUR_MS = 3_600_000;

/**
 * The requests that hold their slot of the limit (taken before the body is read, checked again by the guard). Kept
 * here rather than on the request: Express's Request is augmented in one place only (common/request-logger.ts).
 */
const admitted = new WeakSet<Request>();

/** 100 entries of 512 characters are 308 KB with every character \u-escaped (docs/api.md#post-v1api-keysexposed). */
const EXPOSED_REPORT_BODY_LIMIT_BYTES = 320 * 1024;

/**
 * EXPOSED_REPORTS_PER_HOUR per client address, the slot taken before the body is read (http-setup, as the route's
 * LargeBodyRoute; docs/adr/0026-request-body-bounds.md). The guard only checks that it was taken.
 */
@Injectable()
export class ExposedReportLimitGuard implements CanActivate, LargeBodyRoute {
  readonly method = 'POST';
  readonly path = '/v1/api-keys/exposed';
  readonly limitBytes = EXPOSED_REPORT_BODY_LIMIT_BYTES;
  private readonly perHour: number;

  constructor(
    @InjectConfig() config: AppConfiguration,
    @Inject(FAILURE_COUNTER) private readonly counter: FailureCounter,
    private readonly metrics: Metrics,
  ) {
    this.perHour = config.rateLimit.exposedReportsPerHour;
  }

  async admit(req: Request): Promise<void> {
    if (admitted.has(req)) return;
    const slot = await this.counter.reserve(
      `exposed-reports:addr:${clientNetwork(clientAddress(req))}`,
      this.perHour,
      HOUR_MS,
    );
    if (!slot.granted) {
      this.metrics.rateLimited('exposed_reports');
      throw tooManyRequests('too_many_exposed_reports', slot.resetsInMs);
    }
    admitted.add(req);
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    await this.admit(context.switchToHttp().getRequest<Request>());
    return true;
  }
}
