import { ErrorCode, HTTP_STATUS, Messages, OAUTH_ERROR, OAuthErrorName, wireCode } from './error-codes';
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

/** The options of the older form `new AppError(code, message, options)`, being replaced by the reason's. */
interface CodeFormOptions extends Omit<AppErrorOptions, 'message' | 'oauthDescription'> {
  oauth?: OAuthDetail;
  reason?: ErrorReason;
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

  constructor(reason: ErrorReason, options?: AppErrorOptions);
  /** @deprecated name the reason: `new AppError(reason, { message })`. */
  constructor(code: ErrorCode, message: string, options?: CodeFormOptions);
  constructor(first: ErrorReason | ErrorCode, second?: AppErrorOptions | string, third?: CodeFormOptions) {
    const codeForm = typeof second === 'string';
    const options: AppErrorOptions & CodeFormOptions = (codeForm ? third : second) ?? {};
    const reason: ErrorReason = codeForm
      ? (options.reason ?? (first.toLowerCase() as ErrorReason))
      : (first as ErrorReason);
    const entry: ReasonEntry = (ERROR_REASONS as Record<string, ReasonEntry>)[reason] ?? ERROR_REASONS.internal;
    const code = codeForm ? (first as ErrorCode) : entry.code;
    const message = codeForm ? second : (options.message ?? entry.message);
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'AppError';
    this.code = code;
    this.reason = reason;
    this.headers = options.headers ?? {};
    this.details = options.details ?? {};
    this.oauth = {
      error: options.oauth?.error ?? entry.oauth ?? OAUTH_ERROR[code],
      description: options.oauth?.description ?? options.oauthDescription,
    };
  }

  get status(): number {
    return HTTP_STATUS[this.code];
  }
}

/** The body of docs/api.md#errors: SPEC section 7's `{ code, message }`, the catalogue's `reason`, any details. */
export function errorBody(error: AppError): Record<string, unknown> {
  return { code: wireCode(error.code), message: error.message, reason: error.reason, ...error.details };
}

export const invalidArgument = (): AppError => new AppError(ErrorCode.INVALID_ARGUMENT, Messages.invalidArgument);

export const unauthenticatedBearer = (): AppError =>
  new AppError(ErrorCode.UNAUTHENTICATED, Messages.userNotAuthenticated, {
    headers: { 'WWW-Authenticate': 'Bearer realm="gatehouse"' },
  });

export const API_KEY_CHALLENGE: Readonly<Record<string, string>> = { 'WWW-Authenticate': 'ApiKey realm="gatehouse"' };

export const permissionDenied = (): AppError =>
  new AppError(ErrorCode.PERMISSION_DENIED, Messages.insufficientPermissions);

export const notFound = (message: string): AppError => new AppError(ErrorCode.NOT_FOUND, message);

/** A key's access token from outside its allowlist (docs/api.md#allowlists-and-rate-limits). */
export const addressNotAllowed = (): AppError =>
  new AppError(ErrorCode.PERMISSION_DENIED, Messages.apiKeyNotAllowedFromAddress);

/** `Retry-After` in whole seconds, at least 1. */
export const tooManyRequests = (retryAfterMs: number): AppError =>
  new AppError(ErrorCode.RESOURCE_EXHAUSTED, Messages.tooManyRequests, {
    headers: { 'Retry-After': String(Math.max(1, Math.ceil(retryAfterMs / 1000))) },
  });
