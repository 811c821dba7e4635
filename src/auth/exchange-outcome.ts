import { AppError, ErrorCode } from '../common/errors';
import { toAppError } from '../common/exception.filter';

/**
 * A refused credential (a key, a subject token) that the failure limit counts against its client address: a refusal
 * keeps its slot, anything else (the database, an identity provider unavailable) gives it back.
 */
export abstract class CountedRefusal extends AppError {
  /**
   * The metrics' `outcome` label and the audit trail's reason (docs/operations.md#metrics): finer than the public
   * `reason` where the answer deliberately does not tell which check failed.
   */
  abstract readonly outcome: string;
}

/** The `outcome` label of a refused exchange (docs/operations.md#metrics); the controller counts the others. */
export function refusalOutcome(error: unknown): string {
  if (error instanceof CountedRefusal) return error.outcome;
  if (error instanceof AppError && error.code === ErrorCode.RESOURCE_EXHAUSTED) return 'rate_limited';
  return toAppError(error)?.code === ErrorCode.UNAVAILABLE ? 'unavailable' : 'error';
}
