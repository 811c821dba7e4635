import type { ExecutionContext } from '@nestjs/common';
import { Reflector } from '@nestjs/core';
import type { Request } from 'express';
import { AppError, ErrorCode } from '../common/errors';
import { Authenticated, callerOf, Public } from '../identity/access.decorators';
import { ApiKeyGuard } from './api-key.guard';
import type { Principal } from '../identity/principal';
import { BearerAuthGuard } from './bearer-auth.guard';
import { roleMask } from '../identity/roles';
import { TokenAuthentication, TokenAuthenticator, TokenRefusal } from './token-authenticator';
import type { TokenClaims } from './token.service';

class Routes {
  @Public()
  open(): void {}

  @Authenticated({ permissions: ['api_keys:read'] })
  read(): void {}

  @Authenticated({ permissions: ['integrations:write'] })
  write(): void {}

  @Authenticated({ sessionOnly: true })
  signOut(): void {}

  @Authenticated(ApiKeyGuard)
  exchange(): void {}

  undeclared(): void {}
}

const TOKEN = 'eyJhbGciOiJFUzI1NiJ9.eyJzdWIiOiJ4In0.c2ln';
const viewer: Principal = {
  userId: 'u',
  organizationId: 'o',
  role: 'viewer',
  permissions: roleMask('viewer'),
  tokenUse: 'session',
};

function context(handler: keyof Routes, request: Partial<Request>, type = 'http'): ExecutionContext {
  return {
    getType: () => type,
    getHandler: () => Routes.prototype[handler],
    getClass: () => Routes,
    switchToHttp: () => ({ getRequest: () => request }),
  } as unknown as ExecutionContext;
}

describe('BearerAuthGuard', () => {
  const authenticate = jest.fn<Promise<TokenAuthentication | TokenRefusal>, [string, unknown]>();
  const accepted = (principal: Principal): TokenAuthentication => ({
    principal,
    claims: {} as TokenClaims,
    rateLimit: null,
  });
  const guard = new BearerAuthGuard(new Reflector(), { authenticate } as unknown as TokenAuthenticator);
  /** As Nest's guard consumer takes it: a boolean or a promise, a throw either way a refusal. */
  const activate = (executionContext: ExecutionContext): Promise<boolean> =>
    Promise.resolve().then(() => guard.canActivate(executionContext));
  beforeEach(() => {
    authenticate.mockReset();
    authenticate.mockResolvedValue(accepted(viewer));
  });

  const expectUnauthenticated = async (request: Partial<Request>) => {
    const refusal = await activate(context('read', request)).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(AppError);
    expect(refusal).toMatchObject({
      code: ErrorCode.UNAUTHENTICATED,
      message: 'user not authenticated',
      headers: { 'WWW-Authenticate': 'Bearer realm="gatehouse"' },
    });
    expect(authenticate).not.toHaveBeenCalled();
  };

  it('hands the header token to the TokenAuthenticator and the principal to the handler as its caller', async () => {
    const request: Partial<Request> = { headers: { authorization: `bearer ${TOKEN}` }, query: {} };
    await expect(activate(context('read', request))).resolves.toBe(true);
    expect(authenticate).toHaveBeenCalledWith(TOKEN, expect.anything());
    expect(callerOf(request)).toBe(viewer);
  });

  it.each([
    ['no Authorization header', { headers: {}, query: {} }],
    ['another scheme', { headers: { authorization: `Basic ${TOKEN}` }, query: {} }],
    ['Bearer without a token', { headers: { authorization: 'Bearer ' }, query: {} }],
    ['two spaces', { headers: { authorization: `Bearer  ${TOKEN}` }, query: {} }],
    ['the token in the query string only', { headers: {}, query: { access_token: TOKEN } }],
    ['the token in the body only', { headers: {}, query: {}, body: { access_token: TOKEN } }],
    ['the header and a query token', { headers: { authorization: `Bearer ${TOKEN}` }, query: { access_token: TOKEN } }],
    ['the header and a body token', { headers: { authorization: `Bearer ${TOKEN}` }, body: { access_token: TOKEN } }],
  ])('refuses %s with the 401 and its challenge, without reading a token', async (_name, request) => {
    await expectUnauthenticated(request as Partial<Request>);
  });

  it.each([
    ['credential_revoked', 401],
    ['member_removed', 401],
    ['access_token_expired', 401],
    ['address_not_allowed', 403],
  ] as const)("answers the authenticator's refusal %s with its error and reason (%i)", async (reason, status) => {
    authenticate.mockResolvedValue(new TokenRefusal(reason));
    const request: Partial<Request> = { headers: { authorization: `Bearer ${TOKEN}` }, query: {} };
    const refusal = await activate(context('read', request)).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(AppError);
    expect({ status: (refusal as AppError).status, reason: (refusal as AppError).reason }).toEqual({ status, reason });
    expect(() => callerOf(request)).toThrow();
  });

  it("refuses a caller whose role lacks the route's permission with 403", async () => {
    const request: Partial<Request> = { headers: { authorization: `Bearer ${TOKEN}` }, query: {} };
    await expect(activate(context('write', request))).rejects.toMatchObject({
      code: ErrorCode.PERMISSION_DENIED,
      message: 'insufficient permissions',
    });
  });

  it("refuses an admin's access token whose permissions (role AND scopes) lack the route's with 403", async () => {
    authenticate.mockResolvedValue(
      accepted({
        ...viewer,
        role: 'admin',
        tokenUse: 'access',
        credentialId: 'k',
        permissions: roleMask('admin') & roleMask('viewer'),
      }),
    );
    const request: Partial<Request> = { headers: { authorization: `Bearer ${TOKEN}` }, query: {} };
    await expect(activate(context('read', request))).resolves.toBe(true);
    await expect(activate(context('write', request))).rejects.toMatchObject({
      code: ErrorCode.PERMISSION_DENIED,
      message: 'insufficient permissions',
    });
  });

  it('passes on an error that is not a refusal (the database), for the exception filter to classify', async () => {
    const outage = Object.assign(new Error('connect ECONNREFUSED'), { code: 'ECONNREFUSED' });
    authenticate.mockRejectedValue(outage);
    const request: Partial<Request> = { headers: { authorization: `Bearer ${TOKEN}` }, query: {} };
    await expect(activate(context('read', request))).rejects.toBe(outage);
  });

  it('refuses an access token on a session-only route with 403, and lets a session token through', async () => {
    const request: Partial<Request> = { headers: { authorization: `Bearer ${TOKEN}` }, query: {} };
    await expect(activate(context('signOut', request))).resolves.toBe(true);
    authenticate.mockResolvedValue(accepted({ ...viewer, tokenUse: 'access', credentialId: 'k' }));
    await expect(activate(context('signOut', request))).rejects.toMatchObject({
      code: ErrorCode.PERMISSION_DENIED,
    });
  });

  it('refuses every call of a route that declares no access, with or without a token', async () => {
    const request: Partial<Request> = { headers: { authorization: `Bearer ${TOKEN}` }, query: {} };
    await expect(activate(context('undeclared', request))).rejects.toThrow('Routes.undeclared declares no access');
    expect(authenticate).not.toHaveBeenCalled();
  });

  it("leaves another scheme's route to its own guard, without reading a Bearer token or setting a caller", () => {
    const request: Partial<Request> = { headers: { authorization: `Bearer ${TOKEN}` }, query: {} };
    // At once, not a promise: Node 20's promise hooks make every one count (docs/performance.md#promises-on-node-20).
    expect(guard.canActivate(context('exchange', request))).toBe(true);
    expect(authenticate).not.toHaveBeenCalled();
    expect(() => callerOf(request)).toThrow('@Caller() on a route whose guard authenticated nobody');
  });

  it('lets @Public() routes and non-HTTP contexts through without a token', async () => {
    expect(guard.canActivate(context('open', { headers: {}, query: {} }))).toBe(true);
    await expect(activate(context('read', { headers: {} }, 'rpc'))).resolves.toBe(true);
    expect(authenticate).not.toHaveBeenCalled();
  });
});
