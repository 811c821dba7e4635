import { ExchangeRefused } from './key-exchange';
import { AppError, ErrorCode } from '../common/errors';
import { toAppError } from '../common/exception.filter';

/** The `outcome` label of a refused exchange (docs/operations.md#metrics); the controller counts the others. */
export function refusalOutcome(error: unknown): string {
  if (error instanceof ExchangeRefused) return error.reason;
  if (error instanceof AppError && error.code === ErrorCode.RESOURCE_EXHAUSTED) return 'rate_limited';
  return toAppError(error)?.code === ErrorCode.UNAVAILABLE ? 'unavailable' : 'error';
}
