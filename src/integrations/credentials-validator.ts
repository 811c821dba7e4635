import { Inject, Injectable } from '@nestjs/common';
import { AppError, ErrorCode, Messages } from '../common/errors';
import {
  MONITORING_PROVIDER,
  MonitoringCredentials,
  MonitoringProvider,
  ProviderUnavailableError,
} from './monitoring-provider.port';
import { buildOutcome, saveVerdict, ValidationOutcome } from './validation-outcome';

/**
 * Validating provider credentials (docs/integrations.md#validation): the keys first,
 * and the permissions only when the keys work. Both POST .../validate and every save go through here.
 */
@Injectable()
export class CredentialsValidator {
  constructor(@Inject(MONITORING_PROVIDER) private readonly provider: MonitoringProvider) {}

  /**
   * The outcome, whether or not it allows a save. The provider being unavailable (steps 1-2
   * failed, or a required check is Unknown) is 503 here too (docs/api.md#notification-integration-object).
   */
  async validate(credentials: MonitoringCredentials): Promise<ValidationOutcome> {
    let keys;
    try {
      keys = await this.provider.checkKeys(credentials);
    } catch (error) {
      if (error instanceof ProviderUnavailableError) throw providerUnavailable(error);
      throw error;
    }
    const statuses = keys === 'Working' ? await this.provider.checkPermissions(credentials) : new Map();
    const outcome = buildOutcome(keys, statuses, new Date());
    if (saveVerdict(outcome) === 'provider_unavailable') throw providerUnavailable();
    return outcome;
  }

  /** The outcome of credentials that may be saved; otherwise the error that blocks the save. */
  async validateForSave(credentials: MonitoringCredentials): Promise<ValidationOutcome> {
    const outcome = await this.validate(credentials);
    const verdict = saveVerdict(outcome);
    switch (verdict) {
      case 'allowed':
        return outcome;
      case 'keys_invalid':
        throw blocked(Messages.monitoringKeysInvalid, outcome);
      case 'permissions_missing':
        throw blocked(Messages.monitoringPermissionsMissing, outcome);
      case 'provider_unavailable':
        throw providerUnavailable();
    }
  }
}

function blocked(message: string, validation: ValidationOutcome): AppError {
  return new AppError(ErrorCode.FAILED_PRECONDITION, message, { details: { validation } });
}

function providerUnavailable(cause?: unknown): AppError {
  return new AppError(ErrorCode.UNAVAILABLE, Messages.monitoringUnavailable, { cause });
}
