import type { Response } from 'express';
import { AppError, ErrorCode } from './errors';

/** The paths whose errors take the OAuth shape `{ error, error_description }` (RFC 6749 section 5.2, RFC 7662). */
export const OAUTH_PATH_PREFIX = '/oauth/';

/** An error of the OAuth endpoints, as RFC 6749 section 5.2 names it. */
export class OAuthError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    readonly description: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(description);
    this.name = 'OAuthError';
  }
}

const OAUTH_ERROR: Record<ErrorCode, string> = {
  [ErrorCode.INVALID_ARGUMENT]: 'invalid_request',
  [ErrorCode.PAYLOAD_TOO_LARGE]: 'invalid_request',
  [ErrorCode.FAILED_PRECONDITION]: 'invalid_request',
  [ErrorCode.NOT_FOUND]: 'invalid_request',
  [ErrorCode.UNAUTHENTICATED]: 'invalid_client',
  [ErrorCode.PERMISSION_DENIED]: 'unauthorized_client',
  [ErrorCode.RESOURCE_EXHAUSTED]: 'temporarily_unavailable',
  [ErrorCode.UNAVAILABLE]: 'temporarily_unavailable',
  [ErrorCode.INTERNAL]: 'server_error',
};

/** Any error of ours in the OAuth shape, same status; the ApiKey/Bearer challenges are not this endpoint's. */
export function toOAuthError(error: AppError): OAuthError {
  const headers = { ...error.headers };
  delete headers['WWW-Authenticate'];
  return new OAuthError(error.status, OAUTH_ERROR[error.code], error.message, headers);
}

export function sendOAuthError(response: Response, error: OAuthError): void {
  if (response.headersSent) {
    response.end();
    return;
  }
  for (const [name, value] of Object.entries(error.headers)) response.setHeader(name, value);
  response
    .status(error.status)
    .setHeader('Cache-Control', 'no-store')
    .type('application/json')
    .send(JSON.stringify({ error: error.error, error_description: error.description }));
}
