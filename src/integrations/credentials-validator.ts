import { Inject, Injectable } from '@nestjs/common';
import { AppError, ErrorReason } from '../common/errors';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Deadline, DeadlineExceededError } from './deadline';
import {
  MONITORING_PROVIDER,
  MonitoringCredentials,
  MonitoringProvider,
  ProviderUnavailableError,
} from './monitoring-provider.port';
import { ValidationLimits } from './validation-limits';
import { buildOutcome, saveVerdict, ValidationOutcome } from './validation-outcome';

/** Permissions are checked only when the keys work (docs/integrations.md#validation). */
@Injectable()
export class CredentialsValidator {
  private readonly deadlineMs: number;

  constructor(
    @Inject(MONITORING_PROVIDER) private readonly provider: MonitoringProvider,
    private readonly limits: ValidationLimits,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.deadlineMs = config.integrations.validationDeadlineMs;
  }

  /** The outcome, whether or not it allows a save (docs/api.md#notification-integration-object). */
  async validate(organizationId: string, credentials: MonitoringCredentials): Promise<ValidationOutcome> {
    const release = await this.limits.admit(organizationId);
    const deadline = new Deadline(this.deadlineMs);
    try {
      return await deadline.race(this.check(credentials, deadline));
    } catch (error) {
      if (error instanceof ProviderUnavailableError || error instanceof DeadlineExceededError) {
        throw providerUnavailable(error);
      }
      throw error;
    } finally {
      deadline.clear();
      release();
    }
  }

  /** The outcome of credentials that may be saved; otherwise the error that blocks the save. */
  async validateForSave(organizationId: string, credentials: MonitoringCredentials): Promise<ValidationOutcome> {
    const outcome = await this.validate(organizationId, credentials);
    const verdict = saveVerdict(outcome);
    switch (verdict) {
      case 'allowed':
        return outcome;
      case 'keys_invalid':
        throw blocked('monitoring_keys_invalid', outcome);
      case 'permissions_missing':
        throw blocked('monitoring_permissions_missing', outcome);
      case 'provider_unavailable':
        throw providerUnavailable();
    }
  }

  private async check(credentials: MonitoringCredentials, deadline: Deadline): Promise<ValidationOutcome> {
    const keys = await this.provider.checkKeys(credentials, deadline);
    const statuses = keys === 'Working' ? await this.provider.checkPermissions(credentials, deadline) : new Map();
    const outcome = buildOutcome(keys, statuses, new Date());
    if (saveVerdict(outcome) === 'provider_unavailable') throw providerUnavailable();
    return outcome;
  }
}

function blocked(reason: ErrorReason, validation: ValidationOutcome): AppError {
  return new AppError(reason, { details: { validation } });
}

function providerUnavailable(cause?: unknown): AppError {
  return new AppError('monitoring_unavailable', { cause });
}
