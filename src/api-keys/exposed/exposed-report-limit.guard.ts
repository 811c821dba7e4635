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

declare module 'express-serve-static-core' {
  interface Request {
    /** This request holds its slot of the exposed-report limit. */
    exposedReportAdmitted?: true;
  }
}

/**
 * Its body: 100 entries of 512 characters (docs/api.md#post-v1api-keysexposed) are 51 KB in ASCII, 205 KB at 4 bytes
 * a character of UTF-8, 308 KB with every character a \u escape: 320 KiB holds every well-formed report but one
 * written with escaped surrogate pairs throughout. The parser stops reading at the limit.
 */
const EXPOSED_REPORT_BODY_LIMIT_BYTES = 320 * 1024;

/**
 * At most EXPOSED_REPORTS_PER_HOUR requests to POST /v1/api-keys/exposed per client address (IPv6
 * per /64) in a fixed window of an hour, counted in the rate-limit counters (memory, or Redis shared
 * by every instance with REDIS_URL). Every request takes a slot and keeps it, whatever its body; the
 * slot is taken before a byte of the body is read (http-setup, as the route's LargeBodyRoute), so
 * past the limit it is 429 with Retry-After before the body is parsed, validated or stored
 * (docs/api.md#post-v1api-keysexposed). The guard only checks that it was taken.
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
    if (req.exposedReportAdmitted) return;
    const slot = await this.counter.reserve(
      `exposed-reports:addr:${clientNetwork(clientAddress(req))}`,
      this.perHour,
      HOUR_MS,
    );
    if (!slot.granted) {
      this.metrics.rateLimited('exposed_reports');
      throw tooManyRequests(slot.resetsInMs);
    }
    req.exposedReportAdmitted = true;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    await this.admit(context.switchToHttp().getRequest<Request>());
    return true;
  }
}
