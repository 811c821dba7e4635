import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { clientAddress } from '../../common/client-address';
import { setCaller } from '../../identity/access.decorators';
import { ConsoleSsoService, SsoCallback } from './console-sso.service';
import { SsoErrors } from './sso-errors';
import { BINDING_COOKIE, cookieValue } from './sso-rules';

/** The authorization response's parameters the callback reads; the provider may add others (`iss`, `session_state`). */
const READ = ['code', 'state', 'error'] as const;

/**
 * The identity provider's redirect back (GET /v1/console/sso/callback for a provider that sends RFC 9207's `iss`,
 * GET /v1/console/sso/callback/<organization> for one that does not): its `code` and `state`, with the binding cookie
 * of the browser that started the sign-in, are the credential. The caller is the one-time sign-in link the person is
 * sent on to (docs/api.md#get-v1consolessocallback); refusals become pages (SsoPageFilter).
 */
@Injectable()
export class SsoCallbackGuard implements CanActivate {
  /** A credential in the query string and a cookie: no OpenAPI security scheme describes it. */
  static readonly securityScheme = null;

  constructor(private readonly sso: ConsoleSsoService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const address = clientAddress(request);
    setCaller(request, await this.sso.complete(callbackOf(request), { id: request.id, ip: address }));
    return true;
  }
}

function callbackOf(request: Request): SsoCallback {
  const query = request.query as Record<string, unknown>;
  const organization: unknown = request.params.organization;
  const callback: SsoCallback = {
    // Decoded by Express; absent at the shared path.
    organization: typeof organization === 'string' ? organization : undefined,
    query: request.originalUrl.includes('?') ? request.originalUrl.slice(request.originalUrl.indexOf('?') + 1) : '',
    binding: cookieValue(request.headers.cookie, BINDING_COOKIE),
  };
  for (const name of READ) {
    const value = query[name];
    // A parameter given twice (an array) or empty is no answer a provider sends.
    if (value === undefined) continue;
    if (typeof value !== 'string' || value === '' || value.length > 2048) throw SsoErrors.malformed();
    callback[name] = value;
  }
  return callback;
}
