import { CanActivate, ExecutionContext, Inject, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { clientAddress, clientNetwork } from '../../common/client-address';
import { AppError, tooManyRequests } from '../../common/errors';
import { FAILURE_COUNTER, FailureCounter } from '../../common/failure-counter';
import { InjectConfig } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import { Metrics } from '../../metrics/metrics';

const HOUR_MS = 3_600_000;

/**
 * POST /oauth/register's gate (docs/mcp.md#dynamic-client-registration): 404 while dynamic registration is off, then
 * OAUTH_REGISTRATIONS_PER_HOUR per client address (IPv6 per /64), every request counted, so that no one caller fills
 * the table. The body is at most REGISTRATION_BODY_LIMIT_BYTES (common/http-setup.ts).
 */
@Injectable()
export class RegistrationLimitGuard implements CanActivate {
  private readonly enabled: boolean;
  private readonly perHour: number;

  constructor(
    @InjectConfig() config: AppConfiguration,
    @Inject(FAILURE_COUNTER) private readonly counter: FailureCounter,
    private readonly metrics: Metrics,
  ) {
    this.enabled = config.oauthClients.dynamicRegistration;
    this.perHour = config.oauthClients.registrationsPerHour;
  }

  async canActivate(context: ExecutionContext): Promise<boolean> {
    if (!this.enabled) throw new AppError('registration_disabled');
    const request = context.switchToHttp().getRequest<Request>();
    const slot = await this.counter.reserve(
      `oauth-registrations:addr:${clientNetwork(clientAddress(request))}`,
      this.perHour,
      HOUR_MS,
    );
    if (!slot.granted) {
      this.metrics.rateLimited('oauth_registrations');
      throw tooManyRequests('too_many_registrations', slot.resetsInMs);
    }
    return true;
  }
}
