import { ErrorCode, Messages, OAuthErrorName } from './error-codes';

/** One reason of the catalogue: the code (hence the status) it is answered with, and its message unless a site says more. */
export interface ReasonEntry {
  code: ErrorCode;
  message: string;
  /** The OAuth `error` on the /oauth/ endpoints, when not OAUTH_ERROR's for the code. */
  oauth?: OAuthErrorName;
}

const IA = ErrorCode.INVALID_ARGUMENT;
const UN = ErrorCode.UNAUTHENTICATED;
const PD = ErrorCode.PERMISSION_DENIED;
const NF = ErrorCode.NOT_FOUND;
const FP = ErrorCode.FAILED_PRECONDITION;
const RE = ErrorCode.RESOURCE_EXHAUSTED;
const UA = ErrorCode.UNAVAILABLE;
const IN = ErrorCode.INTERNAL;

/** Sites that say what is wrong in their own words carry this as the catalogue's message (docs/api.md#errors). */
const SAYS_WHAT = '(says what is wrong)';

/**
 * Every reason an error body carries (docs/api.md#errors, docs/adr/0054-one-error-contract.md): stable snake_case
 * names clients branch on, never derived from a message. A reason never tells more than its message does: where the
 * message is deliberately one for several causes (a refused subject token, invalid key credentials), so is the reason.
 * Add a reason here, in docs/api.md's table, and at the site that throws it; test/common/error-reasons.e2e-spec.ts
 * keeps the three in step.
 */
export const ERROR_REASONS = {
  // The request itself.
  invalid_argument: { code: IA, message: Messages.invalidArgument },
  body_too_large: { code: ErrorCode.PAYLOAD_TOO_LARGE, message: Messages.bodyTooLarge },
  route_not_found: { code: NF, message: Messages.routeNotFound },
  page_cursor_invalid: { code: IA, message: Messages.invalidArgument },
  audit_export_range_too_long: { code: IA, message: 'an audit export covers at most 31 days: narrow since and until' },
  expires_at_invalid: { code: IA, message: Messages.invalidArgument },
  usage_range_invalid: { code: IA, message: SAYS_WHAT },

  // Bearer tokens and permissions.
  // The TokenAuthenticator's refusals (docs/adr/0048-one-token-authenticator.md), every one a 401 with the Bearer
  // challenge; introspection answers each `{ active: false }`.
  token_missing: { code: UN, message: Messages.userNotAuthenticated },
  token_malformed: { code: UN, message: Messages.userNotAuthenticated },
  token_sent_twice: { code: UN, message: Messages.userNotAuthenticated },
  token_invalid: { code: UN, message: Messages.userNotAuthenticated },
  access_token_expired: { code: UN, message: Messages.userNotAuthenticated },
  token_wrong_audience: { code: UN, message: Messages.userNotAuthenticated },
  token_wrong_use: { code: UN, message: Messages.userNotAuthenticated },
  session_ended: { code: UN, message: Messages.userNotAuthenticated },
  credential_not_found: { code: UN, message: Messages.userNotAuthenticated },
  credential_revoked: { code: UN, message: Messages.userNotAuthenticated },
  credential_expired: { code: UN, message: Messages.userNotAuthenticated },
  member_removed: { code: UN, message: Messages.userNotAuthenticated },
  insufficient_permissions: { code: PD, message: Messages.insufficientPermissions },
  session_token_required: { code: PD, message: Messages.insufficientPermissions },
  scopes_exceed_permissions: { code: PD, message: Messages.insufficientPermissions },
  insufficient_scope: { code: PD, message: Messages.insufficientPermissions },
  forward_auth_parameters_invalid: { code: IA, message: Messages.invalidArgument },

  // POST /v1/token and the client-credentials grant (SPEC section 7's exact messages).
  authorization_header_missing: { code: UN, message: Messages.authorizationHeaderRequired },
  authorization_scheme_not_api_key: { code: UN, message: Messages.apiKeySchemeRequired },
  api_key_malformed: { code: UN, message: Messages.apiKeyInvalid },
  api_key_invalid_credentials: { code: UN, message: Messages.invalidApiKeyCredentials },
  api_key_revoked: { code: UN, message: Messages.apiKeyRevoked },
  api_key_expired: { code: UN, message: Messages.apiKeyExpired },
  address_not_allowed: { code: PD, message: Messages.apiKeyNotAllowedFromAddress },
  mint_failed: { code: IN, message: Messages.mintFailed },
  too_many_failed_exchanges: { code: RE, message: Messages.tooManyRequests },
  credential_rate_limited: { code: RE, message: Messages.tooManyRequests },

  // The OAuth endpoints' requests (RFC 6749, RFC 7662, RFC 8693).
  form_parameter_repeated: { code: IA, message: SAYS_WHAT },
  client_authentication_missing: { code: UN, message: SAYS_WHAT },
  client_authentication_malformed: { code: UN, message: SAYS_WHAT },
  client_authentication_ambiguous: { code: IA, message: SAYS_WHAT },
  resource_server_credentials_invalid: { code: UN, message: SAYS_WHAT },
  grant_type_missing: { code: IA, message: 'grant_type is required' },
  unsupported_grant_type: {
    code: IA,
    message:
      'grant_type must be one of: client_credentials, urn:ietf:params:oauth:grant-type:token-exchange, ' +
      'authorization_code, refresh_token',
    oauth: 'unsupported_grant_type',
  },
  token_exchange_request_invalid: { code: IA, message: SAYS_WHAT },
  audience_not_supported: {
    code: IA,
    message: 'audience is not supported: name a resource server with resource',
    oauth: 'invalid_target',
  },
  unknown_resource: { code: IA, message: Messages.unknownResource, oauth: 'invalid_target' },
  scope_malformed: {
    code: IA,
    message: 'scope must be distinct names separated by single spaces',
    oauth: 'invalid_scope',
  },
  scope_not_a_permission: { code: IA, message: Messages.invalidArgument, oauth: 'invalid_scope' },
  scope_not_declared: { code: IA, message: Messages.invalidArgument, oauth: 'invalid_scope' },
  scope_not_granted: { code: IA, message: Messages.invalidArgument, oauth: 'invalid_scope' },
  introspection_request_invalid: { code: IA, message: SAYS_WHAT },

  // The token exchange (RFC 8693): one reason for every refused subject token, as one message (FEDERATION).
  subject_token_refused: { code: IA, message: 'the subject token was not accepted', oauth: 'invalid_grant' },
  identity_provider_unavailable: {
    code: UA,
    message: 'the identity provider cannot be reached; try again',
    oauth: 'temporarily_unavailable',
  },

  // API keys.
  api_key_not_found: { code: NF, message: Messages.apiKeyNotFound },
  api_key_limit_reached: { code: FP, message: Messages.apiKeyLimitReached },
  api_key_not_active: { code: FP, message: Messages.apiKeyNotActive },
  allowed_cidrs_invalid: { code: IA, message: SAYS_WHAT },
  allowlist_required: {
    code: IA,
    message: "allowed_cidrs is required: the organization's key policy requires an allowlist",
  },
  allowlist_too_broad: { code: IA, message: SAYS_WHAT },
  too_many_exposed_reports: { code: RE, message: Messages.tooManyRequests },

  // Workload identities.
  workload_identity_not_found: { code: NF, message: 'workload identity not found' },
  workload_identity_limit_reached: { code: FP, message: 'workload identity limit reached' },
  workload_identity_issuer_not_found: { code: IA, message: 'trusted issuer not found' },
  workload_identity_issuer_not_for_workloads: { code: IA, message: 'trusted issuer is not of kind workloads' },
  workload_identity_subject_invalid: { code: IA, message: SAYS_WHAT },
  workload_identity_conditions_invalid: { code: IA, message: SAYS_WHAT },

  // Organizations and members.
  organization_not_found: { code: NF, message: 'organization not found' },
  user_not_found: { code: NF, message: 'user not found' },
  not_a_member: { code: FP, message: SAYS_WHAT },
  organization_settings_invalid: { code: IA, message: SAYS_WHAT },
  member_not_found: { code: NF, message: 'member not found' },
  last_admin: { code: FP, message: SAYS_WHAT },
  member_exists: { code: FP, message: SAYS_WHAT },
  member_email_invalid: { code: IA, message: SAYS_WHAT },
  invitation_not_found: { code: NF, message: 'invitation not found' },

  // Notification integrations.
  integration_not_found: { code: NF, message: Messages.integrationNotFound },
  monitoring_keys_invalid: { code: FP, message: Messages.monitoringKeysInvalid },
  monitoring_permissions_missing: { code: FP, message: Messages.monitoringPermissionsMissing },
  monitoring_unavailable: { code: UA, message: Messages.monitoringUnavailable },
  too_many_validations: { code: RE, message: Messages.tooManyRequests },

  // Webhooks.
  webhook_not_found: { code: NF, message: 'webhook not found' },
  webhook_limit_reached: { code: FP, message: 'webhook limit reached' },
  webhook_disabled: { code: FP, message: 'webhook is disabled' },
  webhook_url_invalid: { code: IA, message: SAYS_WHAT },
  webhook_url_not_https: { code: IA, message: 'webhook url must use https' },
  webhook_url_address_not_allowed: {
    code: IA,
    message: 'webhook url must not point to a private, loopback, link-local, multicast or reserved address',
  },
  webhook_events_invalid: { code: IA, message: SAYS_WHAT },
  too_many_webhook_tests: { code: RE, message: Messages.tooManyRequests },
  webhook_delivery_not_found: { code: NF, message: 'webhook delivery not found' },
  too_many_webhook_resends: { code: RE, message: Messages.tooManyRequests },

  // The revocation feed (SSF).
  stream_not_found: { code: NF, message: 'stream not found' },
  too_many_streams: { code: RE, message: 'too many streams' },
  too_many_waiting_polls: { code: RE, message: 'too many waiting polls for this stream' },

  // Console sign-in links.
  sign_in_link_invalid: { code: UN, message: 'sign-in link invalid' },
  sign_in_link_used: { code: UN, message: 'sign-in link already used' },
  sign_in_link_expired: { code: UN, message: 'sign-in link expired' },
  sign_in_link_other_browser: { code: UN, message: 'sign-in link belongs to another browser' },
  too_many_failed_sign_ins: { code: RE, message: Messages.tooManyRequests },
  invitation_invalid: { code: UN, message: 'invitation invalid' },
  invitation_used: { code: UN, message: 'invitation already used' },
  invitation_expired: { code: UN, message: 'invitation expired' },

  // Console single sign-on: pages a person reads (docs/console.md#single-sign-on).
  sso_not_configured: { code: NF, message: 'no single sign-on for this organization' },
  sso_callback_without_answer: { code: UN, message: SAYS_WHAT },
  sso_answer_incomplete: { code: IA, message: SAYS_WHAT },
  sso_sign_in_unknown: { code: IA, message: SAYS_WHAT },
  sso_sign_in_used: { code: IA, message: SAYS_WHAT },
  sso_sign_in_expired: { code: IA, message: SAYS_WHAT },
  sso_sign_in_other_browser: { code: IA, message: SAYS_WHAT },
  sso_redirect_uri_mismatch: { code: IA, message: SAYS_WHAT },
  sso_provider_error: { code: IA, message: SAYS_WHAT },
  sso_issuer_removed: { code: FP, message: 'single sign-on is no longer set up for this organization' },
  sso_code_refused: { code: IA, message: SAYS_WHAT },
  sso_answer_refused: { code: IA, message: SAYS_WHAT },
  sso_id_token_refused: { code: IA, message: SAYS_WHAT },
  sso_email_missing: { code: PD, message: 'the identity provider did not tell Gatehouse your e-mail address' },
  sso_email_not_verified: { code: PD, message: 'the identity provider has not verified your e-mail address' },
  sso_email_domain_not_allowed: { code: PD, message: SAYS_WHAT },
  sso_no_access: { code: PD, message: SAYS_WHAT },
  sso_access_removed: { code: PD, message: SAYS_WHAT },
  too_many_sso_starts: { code: RE, message: Messages.tooManyRequests },

  // Trusted issuers and resource servers (the admin CLI: docs/operations.md#admin-cli).
  trusted_issuer_not_found: { code: NF, message: SAYS_WHAT },
  trusted_issuer_exists: { code: FP, message: SAYS_WHAT },
  people_issuer_exists: { code: FP, message: SAYS_WHAT },
  people_issuer_taken: { code: FP, message: SAYS_WHAT },
  issuer_invalid: { code: IA, message: SAYS_WHAT },
  issuer_discovery_failed: { code: FP, message: SAYS_WHAT },
  allowed_origin_invalid: { code: IA, message: SAYS_WHAT },
  issuer_client_invalid: { code: IA, message: SAYS_WHAT },
  issuer_option_not_for_kind: { code: IA, message: SAYS_WHAT },
  issuer_audience_invalid: { code: IA, message: SAYS_WHAT },
  jit_role_needs_email_domain: { code: IA, message: SAYS_WHAT },
  email_domain_invalid: { code: IA, message: SAYS_WHAT },
  too_many_issuer_tests: { code: RE, message: Messages.tooManyRequests },
  resource_server_exists: { code: FP, message: SAYS_WHAT },
  resource_server_not_found: { code: NF, message: SAYS_WHAT },
  resource_server_scopes_invalid: { code: IA, message: SAYS_WHAT },

  // The MCP authorization server (docs/mcp.md): the authorization-code and refresh-token grants, consent, grants.
  parameter_missing: { code: IA, message: SAYS_WHAT },
  client_secret_not_accepted: { code: IA, message: 'a public client sends no client_secret' },
  client_authentication_not_accepted: { code: IA, message: 'a public client sends no Authorization header' },
  code_invalid: { code: IA, message: 'the code is not valid', oauth: 'invalid_grant' },
  code_reused: { code: IA, message: 'the code was used already: its grant is revoked', oauth: 'invalid_grant' },
  code_expired: { code: IA, message: 'the code has expired', oauth: 'invalid_grant' },
  refresh_token_invalid: { code: IA, message: 'the refresh token is not valid', oauth: 'invalid_grant' },
  refresh_token_reused: {
    code: IA,
    message: 'the refresh token was used already: its grant is revoked',
    oauth: 'invalid_grant',
  },
  client_mismatch: { code: IA, message: SAYS_WHAT, oauth: 'invalid_grant' },
  redirect_uri_mismatch: {
    code: IA,
    message: 'redirect_uri differs from the authorization request',
    oauth: 'invalid_grant',
  },
  pkce_mismatch: { code: IA, message: 'code_verifier does not match the code_challenge', oauth: 'invalid_grant' },
  resource_mismatch: { code: IA, message: 'resource differs from the authorization request', oauth: 'invalid_grant' },
  resource_not_of_grant: { code: IA, message: 'resource differs from the grant', oauth: 'invalid_target' },
  grant_revoked: { code: IA, message: 'the grant was revoked', oauth: 'invalid_grant' },
  grant_not_found: { code: NF, message: 'grant not found' },
  authorization_request_invalid: {
    code: IA,
    message: 'the authorization request has expired or is not valid: start again',
  },
  client_refused: { code: FP, message: SAYS_WHAT },
  // Registered clients (docs/mcp.md#clients): dynamic registration (RFC 7591), an organization's own, at the token
  // endpoint.
  registration_disabled: { code: NF, message: 'dynamic client registration is off' },
  too_many_registrations: { code: RE, message: Messages.tooManyRequests },
  dynamic_clients_full: {
    code: RE,
    message: 'this server keeps no more dynamically registered clients for now: try again later',
  },
  client_metadata_invalid: { code: IA, message: SAYS_WHAT, oauth: 'invalid_client_metadata' },
  client_redirect_uri_invalid: { code: IA, message: SAYS_WHAT, oauth: 'invalid_redirect_uri' },
  client_unknown: { code: UN, message: SAYS_WHAT },
  client_secret_invalid: { code: UN, message: 'invalid client credentials' },
  oauth_client_not_found: { code: NF, message: 'oauth client not found' },

  // The framework's own refusals, and what no site expects.
  unauthenticated: { code: UN, message: Messages.userNotAuthenticated },
  permission_denied: { code: PD, message: Messages.insufficientPermissions },
  too_many_requests: { code: RE, message: Messages.tooManyRequests },
  service_unavailable: { code: UA, message: Messages.unavailable },
  database_unavailable: { code: UA, message: Messages.unavailable },
  shutting_down: { code: UA, message: Messages.unavailable },
  not_ready: { code: UA, message: Messages.unavailable },
  internal: { code: IN, message: Messages.internal },
} as const satisfies Record<string, ReasonEntry>;

/** A reason of the catalogue: any other string does not compile where a reason is asked for. */
export type ErrorReason = keyof typeof ERROR_REASONS;

export function reasonEntry(reason: ErrorReason): ReasonEntry {
  return ERROR_REASONS[reason];
}
