import { AppError, ErrorCode } from '../common/errors';
import type { CredentialUsageCounter } from '../credentials/credential-usage.counter';
import type { IdentityService } from '../identity/identity.service';
import { roleMask } from '../identity/roles';
import type { CredentialLivenessKinds, CredentialLiveness, CredentialState } from './credential-liveness';
import type { KeyRequestLimiter } from './key-request-limiter';
import { bearerCredential, TokenAuthentication, TokenAuthenticator, TokenRefusal } from './token-authenticator';
import type { TokenClaims, TokenService, TokenVerificationFailure, VerifiedToken } from './token.service';

const OWN = 'gatehouse';
const ORDERS = 'https://orders.example.com';
const USER = 'u-1';
const ORG = 'o-1';
const KEY = '0190a000-0000-7000-8000-000000000001';
const NOW_S = Math.floor(Date.now() / 1000);

function claims(overrides: Partial<TokenClaims> = {}): TokenClaims {
  return {
    iss: 'https://gatehouse.example',
    aud: OWN,
    sub: USER,
    org: ORG,
    jti: 'j',
    iat: NOW_S,
    exp: NOW_S + 600,
    token_use: 'access',
    client_id: KEY,
    ...overrides,
  };
}

function key(overrides: Partial<CredentialState> = {}): CredentialState {
  return {
    userId: USER,
    organizationId: ORG,
    status: 'ACTIVE',
    scopes: roleMask('admin'),
    expiresAtMs: null,
    allowedCidrs: null,
    rateLimit: null,
    ownerAccess: { role: 'member', accessTokenLifetime: 900 },
    ...overrides,
  };
}

describe('TokenAuthenticator', () => {
  let verification: VerifiedToken | TokenVerificationFailure;
  let session: { role: 'member'; minIssuedAt: number } | null;
  const reads: Record<string, jest.Mock<Promise<CredentialState | undefined>, [string]>> = {
    api_key: jest.fn(),
    workload_identity: jest.fn(),
  };
  const take = jest.fn();
  const count = jest.fn();
  const authenticator = new TokenAuthenticator(
    { audience: OWN, verification: () => verification } as unknown as TokenService,
    { sessionAccess: () => Promise.resolve(session) } as unknown as IdentityService,
    { of: (kind: string): CredentialLiveness => ({ read: reads[kind] }) } as unknown as CredentialLivenessKinds,
    { take } as unknown as KeyRequestLimiter,
    { count } as unknown as CredentialUsageCounter,
  );

  const verified = (c: TokenClaims, permissions = roleMask('admin')): VerifiedToken => ({ claims: c, permissions });
  const reason = (outcome: TokenAuthentication | TokenRefusal): string =>
    outcome instanceof TokenRefusal ? outcome.reason : 'accepted';

  beforeEach(() => {
    verification = verified(claims());
    session = { role: 'member', minIssuedAt: NOW_S - 60 };
    reads.api_key.mockReset().mockResolvedValue(key());
    reads.workload_identity.mockReset().mockResolvedValue(key());
    take.mockReset().mockResolvedValue({ 'RateLimit-Policy': 'p', RateLimit: 'r' });
    count.mockReset();
  });

  it("accepts a live key's access token: the role, narrowed by the key's and the token's scopes", async () => {
    verification = verified(claims(), roleMask('viewer'));
    reads.api_key.mockResolvedValue(key({ ownerAccess: { role: 'admin', accessTokenLifetime: 900 } }));
    const outcome = (await authenticator.authenticate('t')) as TokenAuthentication;
    expect(outcome.principal).toEqual({
      userId: USER,
      organizationId: ORG,
      role: 'admin',
      permissions: roleMask('viewer'),
      tokenUse: 'access',
      credentialId: KEY,
      credentialExpiresAtMs: null,
      credentialAllowedCidrs: null,
      credentialRateLimit: null,
    });
    expect(reads.api_key).toHaveBeenCalledWith(KEY);
  });

  it.each([
    ['invalid', 'token_invalid'],
    ['expired', 'access_token_expired'],
  ] as const)('refuses a token that did not verify (%s) as %s, reading nothing', async (failure, expected) => {
    verification = failure;
    expect(reason(await authenticator.authenticate('t'))).toBe(expected);
    expect(reads.api_key).not.toHaveBeenCalled();
  });

  it("holds the audience: the default one for the own API, exactly the resource server's otherwise", async () => {
    verification = verified(claims({ aud: ORDERS }));
    expect(reason(await authenticator.authenticate('t'))).toBe('token_wrong_audience');
    expect(reason(await authenticator.authenticate('t', { audience: ORDERS }))).toBe('accepted');
    expect(reason(await authenticator.authenticate('t', { audience: 'https://billing.example.com' }))).toBe(
      'token_wrong_audience',
    );
    // Gatehouse's own audience is never a resource server's, even when a gateway names it.
    verification = verified(claims());
    expect(reason(await authenticator.authenticate('t', { audience: OWN }))).toBe('token_wrong_audience');
  });

  it("asks for a resource server's audience only once the token verified, and takes no session token there", async () => {
    const audience = jest.fn(() => ORDERS);
    verification = 'invalid';
    await authenticator.authenticate('t', { audience });
    expect(audience).not.toHaveBeenCalled();
    verification = verified(claims({ aud: ORDERS, token_use: 'session', client_id: undefined }));
    expect(reason(await authenticator.authenticate('t', { audience }))).toBe('token_wrong_use');
  });

  it.each([
    ['credential_not_found', undefined],
    ['credential_not_found', key({ userId: 'someone-else' })],
    ['credential_not_found', key({ organizationId: 'another-org' })],
    ['member_removed', key({ ownerAccess: null })],
    ['member_removed', key({ ownerAccess: null, status: 'REVOKED' })],
    ['credential_revoked', key({ status: 'REVOKED' })],
    ['credential_expired', key({ expiresAtMs: Date.now() - 1 })],
  ])('refuses %s (%#)', async (expected, found) => {
    reads.api_key.mockResolvedValue(found);
    expect(reason(await authenticator.authenticate('t'))).toBe(expected);
  });

  it("reads a workload identity's token through its own kind, with the same rules", async () => {
    verification = verified(claims({ client_type: 'workload_identity' }));
    reads.workload_identity.mockResolvedValue(key({ status: 'REVOKED' }));
    expect(reason(await authenticator.authenticate('t'))).toBe('credential_revoked');
    expect(reads.workload_identity).toHaveBeenCalledWith(KEY);
    expect(reads.api_key).not.toHaveBeenCalled();
  });

  it("a session token: its member's role, refused once removed or signed out since it was issued", async () => {
    verification = verified(claims({ token_use: 'session', client_id: undefined }));
    const outcome = (await authenticator.authenticate('t')) as TokenAuthentication;
    expect(outcome.principal).toEqual({
      userId: USER,
      organizationId: ORG,
      role: 'member',
      permissions: roleMask('member'),
      tokenUse: 'session',
    });
    session = { role: 'member', minIssuedAt: NOW_S + 1 };
    expect(reason(await authenticator.authenticate('t'))).toBe('session_ended');
    session = null;
    expect(reason(await authenticator.authenticate('t'))).toBe('member_removed');
  });

  it("holds the allowlist against the client's address, asked only for a key that has one", async () => {
    const address = jest.fn(() => '198.51.100.7');
    await authenticator.authenticate('t', { address });
    expect(address).not.toHaveBeenCalled();
    reads.api_key.mockResolvedValue(key({ allowedCidrs: '203.0.113.0/24' }));
    expect(reason(await authenticator.authenticate('t', { address }))).toBe('address_not_allowed');
    expect(reason(await authenticator.authenticate('t', { address: () => '203.0.113.9' }))).toBe('accepted');
    // No address to hold it against (introspection without client_ip): not checked here.
    expect(reason(await authenticator.authenticate('t'))).toBe('accepted');
  });

  it('counts a request against the rate limit only when asked (forward auth), after the allowlist', async () => {
    const limit = { requests: 10, windowSeconds: 60 };
    reads.api_key.mockResolvedValue(key({ rateLimit: limit }));
    expect(((await authenticator.authenticate('t')) as TokenAuthentication).rateLimit).toBeNull();
    expect(take).not.toHaveBeenCalled();
    const counted = (await authenticator.authenticate('t', { countRequest: true })) as TokenAuthentication;
    expect(counted.rateLimit).toEqual({ 'RateLimit-Policy': 'p', RateLimit: 'r' });
    expect(take).toHaveBeenCalledWith(KEY, limit);
    take.mockReset();
    reads.api_key.mockResolvedValue(key({ rateLimit: limit, allowedCidrs: '203.0.113.0/24' }));
    const outside = await authenticator.authenticate('t', { countRequest: true, address: () => '198.51.100.7' });
    expect(reason(outside)).toBe('address_not_allowed');
    expect(take).not.toHaveBeenCalled();
  });

  it('counts the refusals of the credential a verified token names in usage over time, when asked', async () => {
    const forward = { audience: ORDERS, usage: 'forward_auth' as const };
    verification = verified(claims({ aud: ORDERS }));
    reads.api_key.mockResolvedValue(key({ status: 'REVOKED' }));
    expect(reason(await authenticator.authenticate('t', forward))).toBe('credential_revoked');
    expect(count).toHaveBeenLastCalledWith('api_key', KEY, ORG, 'forward_auth', false);
    // Another audience, a workload identity's token: its kind.
    verification = verified(claims({ aud: OWN, client_type: 'workload_identity' }));
    expect(reason(await authenticator.authenticate('t', { ...forward, usage: 'introspection' }))).toBe(
      'token_wrong_audience',
    );
    expect(count).toHaveBeenLastCalledWith('workload_identity', KEY, ORG, 'introspection', false);
    // Past its rate limit: counted, and thrown as before.
    verification = verified(claims({ aud: ORDERS }));
    reads.api_key.mockResolvedValue(key({ rateLimit: { requests: 1, windowSeconds: 60 } }));
    take.mockRejectedValue(new AppError('credential_rate_limited'));
    await expect(authenticator.authenticate('t', { ...forward, countRequest: true })).rejects.toThrow(AppError);
    expect(count).toHaveBeenCalledTimes(3);

    count.mockReset();
    // Not identified: a token that does not verify, a credential not found, a session token; nor without `usage`.
    verification = 'invalid';
    await authenticator.authenticate('t', forward);
    verification = verified(claims({ aud: ORDERS }));
    reads.api_key.mockResolvedValue(undefined);
    expect(reason(await authenticator.authenticate('t', forward))).toBe('credential_not_found');
    verification = verified(claims({ client_id: undefined, token_use: 'session' }));
    expect(reason(await authenticator.authenticate('t', forward))).toBe('token_wrong_use');
    reads.api_key.mockResolvedValue(key({ status: 'REVOKED' }));
    verification = verified(claims({ aud: ORDERS }));
    expect(reason(await authenticator.authenticate('t', { audience: ORDERS }))).toBe('credential_revoked');
    expect(count).not.toHaveBeenCalled();

    // A success is the entry point's to count, once its own checks passed.
    reads.api_key.mockResolvedValue(key());
    const accepted = (await authenticator.authenticate('t', forward)) as TokenAuthentication;
    expect(count).not.toHaveBeenCalled();
    authenticator.countUse(accepted, 'forward_auth', true);
    expect(count).toHaveBeenCalledWith('api_key', KEY, ORG, 'forward_auth', true);
  });

  it("renders a refusal as the own API's error with its reason: 401 with the Bearer challenge, 403 for the address", () => {
    const revoked = new TokenRefusal('credential_revoked').error();
    expect(revoked).toBeInstanceOf(AppError);
    expect(revoked).toMatchObject({
      code: ErrorCode.UNAUTHENTICATED,
      message: 'user not authenticated',
      reason: 'credential_revoked',
      headers: { 'WWW-Authenticate': 'Bearer realm="gatehouse"' },
    });
    expect(new TokenRefusal('address_not_allowed').error()).toMatchObject({
      code: ErrorCode.PERMISSION_DENIED,
      message: 'api key not allowed from this address',
      reason: 'address_not_allowed',
      headers: {},
    });
  });

  it('reads a Bearer token from the Authorization header only, or says why there is none', () => {
    expect(bearerCredential('Bearer abc.def.ghi')).toBe('abc.def.ghi');
    expect(bearerCredential('bearer abc')).toBe('abc');
    expect((bearerCredential(undefined) as TokenRefusal).reason).toBe('token_missing');
    expect((bearerCredential('') as TokenRefusal).reason).toBe('token_missing');
    for (const header of ['Bearer', 'Bearer  abc', 'Basic abc', 'Bearer a b']) {
      expect((bearerCredential(header) as TokenRefusal).reason).toBe('token_malformed');
    }
  });
});
