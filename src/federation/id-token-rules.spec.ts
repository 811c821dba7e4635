import { idTokenRefusal } from './id-token-rules';
import { idTokenKey } from './id-token-uses';

describe('ID token rules', () => {
  const clientId = 'gatehouse-console';
  const claims = { iss: 'https://idp.example', sub: 'alice', aud: clientId, iat: 1, exp: 2, email: 'a@example.com' };
  const reasonOf = (header: { typ?: unknown }, extra: Record<string, unknown> = {}) =>
    idTokenRefusal(header, { ...claims, ...extra }, clientId)?.reason ?? null;

  it('takes no typ, or JWT in any case, with or without application/ (RFC 7515 section 4.1.9)', () => {
    for (const typ of [undefined, 'JWT', 'jwt', 'Jwt', 'application/jwt', 'APPLICATION/JWT']) {
      expect({ typ, reason: reasonOf({ typ }) }).toEqual({ typ, reason: null });
    }
  });

  it("refuses an access token's at+jwt and any other typ as not an ID token", () => {
    for (const typ of ['at+jwt', 'AT+JWT', 'application/at+jwt', 'logout+jwt', 'secevent+jwt', 'JOSE', '', 1, null]) {
      expect({ typ, reason: reasonOf({ typ }) }).toEqual({ typ, reason: 'not_an_id_token' });
    }
  });

  it("refuses the claims only an access token has (RFC 9068's client_id and scope, Entra ID's and Okta's scp)", () => {
    for (const extra of [{ client_id: clientId }, { scope: 'openid' }, { scp: 'access_as_user' }]) {
      expect({ extra, reason: reasonOf({ typ: 'JWT' }, extra) }).toEqual({ extra, reason: 'not_an_id_token' });
    }
  });

  it('takes an azp that is the client id, refuses any other, and requires it with several audiences', () => {
    expect(reasonOf({}, { azp: clientId })).toBeNull();
    expect(reasonOf({}, { aud: [clientId], azp: undefined })).toBeNull();
    expect(reasonOf({}, { aud: [clientId, 'other-app'], azp: clientId })).toBeNull();
    expect(reasonOf({}, { azp: 'other-app' })).toBe('wrong_authorized_party');
    expect(reasonOf({}, { azp: [clientId] })).toBe('wrong_authorized_party');
    expect(reasonOf({}, { aud: [clientId, 'other-app'] })).toBe('wrong_authorized_party');
    expect(reasonOf({}, { aud: [clientId, 'other-app'], azp: 'other-app' })).toBe('wrong_authorized_party');
  });

  it('takes a nonce it cannot compare, or none; a nonce that is no string is malformed', () => {
    expect(reasonOf({}, { nonce: 'n-0S6_WzA2Mj' })).toBeNull();
    expect(reasonOf({}, { nonce: 42 })).toBe('malformed');
    expect(reasonOf({}, { nonce: null })).toBe('malformed');
  });

  it("keys a token by its issuer's jti, else by its signed header and payload, never by its signature's bytes", () => {
    const jws = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJhIn0';
    const withJti = idTokenKey({ iss: 'https://idp.example', jti: 'j-1' }, `${jws}.sig`);
    expect(withJti).toMatch(/^[0-9a-f]{64}$/);
    expect(idTokenKey({ iss: 'https://idp.example', jti: 'j-1' }, 'other.token.value')).toBe(withJti);
    expect(idTokenKey({ iss: 'https://other.example', jti: 'j-1' }, `${jws}.sig`)).not.toBe(withJti);
    const withoutJti = idTokenKey({ iss: 'https://idp.example' }, `${jws}.sig`);
    // An ECDSA signature's second form, (r, n - s), is the same token.
    expect(idTokenKey({ iss: 'https://idp.example' }, `${jws}.other-sig`)).toBe(withoutJti);
    expect(idTokenKey({ iss: 'https://idp.example' }, `${jws}x.sig`)).not.toBe(withoutJti);
    expect(idTokenKey({ iss: 'https://other.example' }, `${jws}.sig`)).not.toBe(withoutJti);
    expect(withoutJti).not.toBe(withJti);
  });
});
