/** RFC 8693's grant and token types (docs/federation.md#token-exchange). */
export const TOKEN_EXCHANGE_GRANT = 'urn:ietf:params:oauth:grant-type:token-exchange';
export const JWT_TYPE = 'urn:ietf:params:oauth:token-type:jwt';
export const ID_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:id_token';
export const ACCESS_TOKEN_TYPE = 'urn:ietf:params:oauth:token-type:access_token';

/** The one answer to every refused subject token, whatever check failed. */
export const SUBJECT_TOKEN_REFUSED = {
  error: 'invalid_grant',
  error_description: 'the subject token was not accepted',
  reason: 'subject_token_refused',
};

/** The form of a workload's token exchange (docs/federation.md#token-exchange), with `extra` parameters over it. */
export const workloadForm = (subjectToken: string, extra: Record<string, string> = {}): Record<string, string> => ({
  grant_type: TOKEN_EXCHANGE_GRANT,
  subject_token: subjectToken,
  subject_token_type: JWT_TYPE,
  ...extra,
});
