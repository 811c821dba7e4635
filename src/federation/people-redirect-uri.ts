/**
 * The redirect URI of an organization's people issuer, registered at its identity provider and sent in both the
 * authorization and the token request: the two defences of RFC 9700 section 4.4.2 against the mix-up attack (section
 * 4.4.1), docs/adr/0042-sso-redirect-uri-per-organization.md:
 * - an issuer whose discovery document announces `authorization_response_iss_parameter_supported` gets the shared
 *   `<PUBLIC_BASE_URL>/v1/console/sso/callback`: openid-client then requires its `iss` in the answer and checks it
 *   against the issuer the sign-in was started at (RFC 9207 section 2.4), before the code goes anywhere;
 * - any other gets `<PUBLIC_BASE_URL>/v1/console/sso/callback/<organization>` (its name, URL-encoded), distinct per
 *   authorization server: the callback knows whose answer it is by where it arrives. Keyed by the organization rather
 *   than the issuer: each has at most one people issuer and each people issuer serves one organization, and the name is
 *   known before the operator registers Gatehouse at their provider.
 * The console's single sign-on sends it; `trusted-issuer add` and the console's set-up show it.
 */
export function peopleRedirectUri(
  publicBaseUrl: string,
  organizationName: string,
  issParameterSupported: boolean,
): string {
  const shared = `${publicBaseUrl}/v1/console/sso/callback`;
  return issParameterSupported ? shared : `${shared}/${encodeURIComponent(organizationName)}`;
}
