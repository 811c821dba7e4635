/** Every error code the service answers with; the HTTP status is decided only in HTTP_STATUS (docs/api.md#errors). */
export enum ErrorCode {
  INVALID_ARGUMENT = 'INVALID_ARGUMENT',
  UNAUTHENTICATED = 'UNAUTHENTICATED',
  PERMISSION_DENIED = 'PERMISSION_DENIED',
  NOT_FOUND = 'NOT_FOUND',
  FAILED_PRECONDITION = 'FAILED_PRECONDITION',
  PAYLOAD_TOO_LARGE = 'PAYLOAD_TOO_LARGE',
  RESOURCE_EXHAUSTED = 'RESOURCE_EXHAUSTED',
  UNAVAILABLE = 'UNAVAILABLE',
  INTERNAL = 'INTERNAL',
}

/** PAYLOAD_TOO_LARGE is rendered with the wire code INVALID_ARGUMENT. */
export const HTTP_STATUS: Record<ErrorCode, number> = {
  [ErrorCode.INVALID_ARGUMENT]: 400,
  [ErrorCode.UNAUTHENTICATED]: 401,
  [ErrorCode.PERMISSION_DENIED]: 403,
  [ErrorCode.NOT_FOUND]: 404,
  [ErrorCode.FAILED_PRECONDITION]: 400,
  [ErrorCode.PAYLOAD_TOO_LARGE]: 413,
  [ErrorCode.RESOURCE_EXHAUSTED]: 429,
  [ErrorCode.UNAVAILABLE]: 503,
  [ErrorCode.INTERNAL]: 500,
};

/** The `error` names the OAuth endpoints answer with (RFC 6749 section 5.2, RFC 8707 section 2). */
export type OAuthErrorName =
  | 'invalid_request'
  | 'invalid_client'
  | 'invalid_grant'
  | 'invalid_scope'
  | 'invalid_target'
  | 'unsupported_grant_type'
  | 'unauthorized_client'
  | 'temporarily_unavailable'
  | 'server_error'
  /** RFC 7591 section 3.2.2: the registration endpoint's own. */
  | 'invalid_redirect_uri'
  | 'invalid_client_metadata';

/** The OAuth `error` of each code on the OAuth endpoints, unless the error names its own (ERROR_REASONS' `oauth`). */
export const OAUTH_ERROR: Record<ErrorCode, OAuthErrorName> = {
  [ErrorCode.INVALID_ARGUMENT]: 'invalid_request',
  [ErrorCode.UNAUTHENTICATED]: 'invalid_client',
  [ErrorCode.PERMISSION_DENIED]: 'unauthorized_client',
  [ErrorCode.NOT_FOUND]: 'invalid_request',
  [ErrorCode.FAILED_PRECONDITION]: 'invalid_request',
  [ErrorCode.PAYLOAD_TOO_LARGE]: 'invalid_request',
  [ErrorCode.RESOURCE_EXHAUSTED]: 'temporarily_unavailable',
  [ErrorCode.UNAVAILABLE]: 'temporarily_unavailable',
  [ErrorCode.INTERNAL]: 'server_error',
};

export function wireCode(code: ErrorCode): string {
  return code === ErrorCode.PAYLOAD_TOO_LARGE ? ErrorCode.INVALID_ARGUMENT : code;
}

/** Exact messages of docs/api.md#errors. */
export const Messages = {
  invalidArgument: 'invalid request parameters',
  unknownResource: 'unknown resource',
  bodyTooLarge: 'request body too large',
  userNotAuthenticated: 'user not authenticated',
  invalidApiKeyCredentials: 'invalid api key credentials',
  apiKeyRevoked: 'api key revoked',
  apiKeyExpired: 'api key expired',
  apiKeyNotActive: 'api key is not active',
  apiKeyInvalid: 'api key invalid',
  authorizationHeaderRequired: 'authorization header required',
  apiKeySchemeRequired: 'authorization header must use ApiKey scheme',
  insufficientPermissions: 'insufficient permissions',
  apiKeyNotAllowedFromAddress: 'api key not allowed from this address',
  apiKeyNotFound: 'api key not found',
  apiKeyLimitReached: 'api key limit reached',
  routeNotFound: 'route not found',
  mintFailed: 'failed to mint access token',
  internal: 'internal error',
  unavailable: 'service unavailable',
  tooManyRequests: 'too many requests',
  integrationNotFound: 'notification integration not found',
  monitoringKeysInvalid: 'monitoring api keys are invalid',
  monitoringPermissionsMissing: 'required monitoring permissions are missing',
  monitoringUnavailable: 'monitoring provider unavailable',
} as const;
