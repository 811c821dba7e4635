import type { JWTPayload } from 'jose';

/**
 * What makes a verified subject token of a `people` issuer an ID token issued to Gatehouse (docs/federation.md#people-id-tokens,
 * OpenID Connect Core 1.0 section 3.1.3.7), beyond the checks every subject token has (SubjectTokenVerifier): the
 * header's `typ`, no access token's claims, the authorized party. Pure, so that each rule is tested on its own.
 */

/** Why a verified token of a `people` issuer is not an ID token for Gatehouse: for the audit log and the metrics. */
export const ID_TOKEN_REFUSALS = ['not_an_id_token', 'wrong_authorized_party', 'malformed'] as const;
export type IdTokenRefusalReason = (typeof ID_TOKEN_REFUSALS)[number];

export interface IdTokenRefusal {
  reason: IdTokenRefusalReason;
  /** For logs only, never for the client: the rule that failed, in words. */
  detail: string;
}

/**
 * Claims an access token has and an ID token does not: RFC 9068's `client_id` and `scope` (section 2.2), and the `scp`
 * of Entra ID and Okta, whose access tokens for an application's own API carry its client id as `aud` and `typ: JWT`.
 */
const ACCESS_TOKEN_CLAIMS = ['client_id', 'scope', 'scp'] as const;

/**
 * Null when `header` and `claims` (signature, issuer, times and audience already verified) are those of an ID token
 * issued to `clientId`, Gatehouse's client id at the issuer; else why not:
 * - `typ`, when present, is `JWT` (RFC 7519 section 5.1; any case, `application/` optional, RFC 7515 section 4.1.9):
 *   an `at+jwt` (RFC 9068) or any other type is no ID token;
 * - none of the claims only an access token has;
 * - `azp`, when present, is `clientId`, and is present when `aud` has several values (section 3.1.3.7 items 4-5): a
 *   token issued to another client of the same provider is that client's credential, not Gatehouse's;
 * - `nonce`, when present, is a string. Gatehouse sent no authentication request for this token, so it has no nonce to
 *   compare (item 11): a nonce is accepted and protects nothing here; the one use of each token does.
 */
export function idTokenRefusal(header: { typ?: unknown }, claims: JWTPayload, clientId: string): IdTokenRefusal | null {
  const { typ } = header;
  if (typ !== undefined && (typeof typ !== 'string' || typ.toLowerCase().replace(/^application\//, '') !== 'jwt')) {
    return { reason: 'not_an_id_token', detail: `typ ${JSON.stringify(typ)}` };
  }
  const accessClaim = ACCESS_TOKEN_CLAIMS.find((name) => name in claims);
  if (accessClaim !== undefined) return { reason: 'not_an_id_token', detail: `an access token's ${accessClaim} claim` };
  const { aud, azp } = claims;
  if (azp !== undefined && azp !== clientId) {
    return { reason: 'wrong_authorized_party', detail: `azp ${JSON.stringify(azp)}` };
  }
  if (Array.isArray(aud) && aud.length > 1 && azp === undefined) {
    return { reason: 'wrong_authorized_party', detail: `no azp with aud ${JSON.stringify(aud)}` };
  }
  if ('nonce' in claims && typeof claims.nonce !== 'string') {
    return { reason: 'malformed', detail: `nonce ${JSON.stringify(claims.nonce)}` };
  }
  return null;
}
