import { ErrorCode, HTTP_STATUS, OAUTH_ERROR, OAuthErrorName, wireCode } from './error-codes';
import { ERROR_REASONS, ErrorReason, ReasonEntry } from './error-reasons';

export { ErrorCode, HTTP_STATUS, Messages, OAUTH_ERROR, wireCode } from './error-codes';
export type { OAuthErrorName } from './error-codes';
export { ERROR_REASONS } from './error-reasons';
export type { ErrorReason } from './error-reasons';

export interface AppErrorOptions {
  /** The message, when the site says more than the catalogue's (the exact ones of docs/api.md#errors stay exact). */
  message?: string;
  headers?: Record<string, string>;
  /** Extra top-level body fields (e.g. `validation`). */
  details?: Record<string, unknown>;
  /** On the OAuth endpoints, an `error_description` other than the message. */
  oauthDescription?: string;
  cause?: unknown;
}

/** An error's RFC 6749 section 5.2 rendering: its `error`, and an `error_description` other than the message. */
export interface OAuthDetail {
  error: OAuthErrorName;
  description?: string;
}

/**
 * A domain error, named by its reason in the catalogue (ERROR_REASONS), which gives its code and default message. The
 * exception filter renders it as `{ code, message, reason, ...details }`, and on the OAuth endpoints as
 * `{ error, error_description, reason }`; the status is HTTP_STATUS's either way. Services throw these; how a reason
 * reads to a person is the renderer's (the CLI names its flags, the console's pages their own words).
 */
export class AppError extends Error {
  readonly code: ErrorCode;
  readonly reason: ErrorReason;
  readonly headers: Record<string, string>;
  readonly details: Record<string, unknown>;
  readonly oauth: OAuthDetail;

  constructor(reason: ErrorReason, options: AppErrorOptions = {}) {
    const entry: ReasonEntry = ERROR_REASONS[reason];
    super(options.message ?? entry.message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = entry.code;
    this.reason = reason;
    this.headers = options.headers ?? {};
    this.details = options.details ?? {};
    this.oauth = { error: entry.oauth ?? OAUTH_ERROR[entry.code], description: options.oauthDescription };
  }

  get status(): number {
    return HTTP_STATUS[this.code];
  }
}

/** The body of docs/api.md#errors: SPEC section 7's `{ code, message }`, the catalogue's `reason`, any details. */
export function errorBody(error: AppError): Record<string, unknown> {
  return { code: wireCode(error.code), message: error.message, reason: error.reason, ...error.details };
}

export const invalidArgument = (reason: ErrorReason = 'invalid_argument'): AppError => new AppError(reason);

export const unauthenticatedBearer = (reason: ErrorReason = 'token_invalid'): AppError =>
  new AppError(reason, { headers: { 'WWW-Authenticate': 'Bearer realm="gatehouse"' } });

export const API_KEY_CHALLENGE: Readonly<Record<string, string>> = { 'WWW-Authenticate': 'ApiKey realm="gatehouse"' };

export const permissionDenied = (reason: ErrorReason = 'insufficient_permissions'): AppError => new AppError(reason);

/** A key's access token from outside its allowlist (docs/api.md#allowlists-and-rate-limits). */
export const addressNotAllowed = (): AppError => new AppError('address_not_allowed');

/** `Retry-After` in whole seconds, at least 1. */
export const tooManyRequests = (reason: ErrorReason, retryAfterMs: number): AppError =>
  new AppError(reason, {
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
  });
