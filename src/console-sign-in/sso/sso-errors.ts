import { AppError } from '../../common/errors';

/**
 * The refusals of console single sign-on, each an AppError whose message the callback's page shows as it is
 * (docs/console.md#single-sign-on). Written for the person in front of the browser: what happened, what to do.
 */
const START_AGAIN = 'start again from the sign-in page';

/**
 * A refusal before the callback used up a sign-in (no state, an unknown, used, expired or another browser's one): it
 * leaves the browser's binding cookie alone, so that a callback URL someone else sends cannot spoil a sign-in under way.
 */
export class StateUntouched extends AppError {}

export const SsoErrors = {
  /** GET /v1/console/sso: an unknown organization and one without a people issuer read the same. */
  notConfigured: () => new AppError('sso_not_configured'),
  /** The callback without `code`, `state` or `error`: no credential at all (the route table's 401). */
  noCredential: () =>
    new StateUntouched('sso_callback_without_answer', {
      message: `this page is where your identity provider sends you back: ${START_AGAIN}`,
      headers: { 'WWW-Authenticate': 'SignInLink realm="gatehouse"' },
    }),
  malformed: () =>
    new StateUntouched('sso_answer_incomplete', {
      message: `the identity provider's answer is incomplete (code and state): ${START_AGAIN}`,
    }),
  unknownState: () => new StateUntouched('sso_sign_in_unknown', { message: `this sign-in is unknown: ${START_AGAIN}` }),
  usedState: () =>
    new StateUntouched('sso_sign_in_used', {
      message: `this sign-in was already completed (each works once): ${START_AGAIN}`,
    }),
  expiredState: (minutes: number) =>
    new StateUntouched('sso_sign_in_expired', {
      message: `this sign-in took longer than ${minutes} minutes: ${START_AGAIN}`,
    }),
  otherBrowser: () =>
    new StateUntouched('sso_sign_in_other_browser', {
      message: `this sign-in was started in another browser, or a newer one was started in this one: ${START_AGAIN} in this browser`,
    }),
  /**
   * An answer at another redirect URI than its sign-in was started with: another provider's, maybe forwarded there
   * (RFC 9700 section 4.4, mix-up), or a provider set up with the wrong one (docs/adr/0042).
   */
  otherRedirectUri: () =>
    new AppError('sso_redirect_uri_mismatch', {
      message: `this answer came back to another address than the sign-in was started with: ${START_AGAIN}`,
    }),
  providerError: (error: string) =>
    new AppError('sso_provider_error', {
      message: `the identity provider did not sign you in (${error}): ${START_AGAIN}`,
    }),
  issuerGone: () => new AppError('sso_issuer_removed'),
  codeRefused: (error: string) =>
    new AppError('sso_code_refused', {
      message: `the identity provider refused the sign-in code (${error}; a code works once, for a few minutes): ${START_AGAIN}`,
    }),
  answerRefused: (detail: string) =>
    new AppError('sso_answer_refused', {
      message: `the identity provider's answer failed a check (${detail}): ${START_AGAIN}`,
    }),
  idTokenRefused: (reason: string) =>
    new AppError('sso_id_token_refused', {
      message: `the identity provider's ID token was refused (${reason}): ${START_AGAIN}`,
    }),
  noEmail: () => new AppError('sso_email_missing'),
  emailNotVerified: () => new AppError('sso_email_not_verified'),
  emailDomainNotAllowed: (email: string) =>
    new AppError('sso_email_domain_not_allowed', {
      message: `${email} is not in an e-mail domain this organization accepts for single sign-on`,
    }),
  noAccess: (email: string, organization: string) =>
    new AppError('sso_no_access', {
      message: `${email} has no access to the console of ${organization}: ask one of its administrators to add you`,
    }),
  /** An admin removed the person: single sign-on does not add them back, only an admin does. */
  accessRemoved: (email: string, organization: string) =>
    new AppError('sso_access_removed', {
      message: `${email}'s access to the console of ${organization} was removed: ask one of its administrators if you need it again`,
    }),
  unavailable: (detail: string) =>
    new AppError('identity_provider_unavailable', {
      message: `the identity provider cannot be reached (${detail}): try again in a moment`,
    }),
};
