import { ExchangeRefused } from './key-exchange';
import { AppError, ErrorCode } from '../common/errors';
import { toAppError } from '../common/exception.filter';

/**
 * The `outcome` label of gatehouse_token_exchanges_total (docs/operations.md#metrics) for an exchange ApiKeyGuard
 * did not let through: the refusal's own reason (missing_header, wrong_scheme, malformed_key, invalid_credentials,
 * revoked, not_a_member, and any reason added later, with no change here), `rate_limited` for the 429 of the
 * failure limit, `unavailable` when the database could not answer (503), `error` for anything else (500).
 * The controller counts `success` and `mint_failed`.
 */
export function refusalOutcome(error: unknown): string {
  if (error instanceof ExchangeRefused) return error.reason;
  if (error instanceof AppError && error.code === ErrorCode.RESOURCE_EXHAUSTED) return 'rate_limited';
  return toAppError(error)?.code === ErrorCode.UNAVAILABLE ? 'unavailable' : 'error';
}
