import type { Request } from 'express';
import { ScopeConstraint } from '../../auth/dto/token-request.dto';
import type { TokenNarrowing } from '../../auth/token.service';
import { AppError, ErrorCode } from '../../common/errors';
import type { FormParameters } from '../../common/client-credentials';
import type { OAuthTokenResponse } from '../openapi';

/**
 * One grant type of POST /oauth/token (RFC 6749 section 4): who asks, then what they get. `authenticate` runs in the
 * route's guard (OAuthGrantGuard) and does only that: the client (or the subject token that stands for one); `issue`
 * runs in the handler and reads the grant's own parameters. A new grant type is a class of this shape and one entry in
 * OAUTH_GRANTS (oauth-grants.ts).
 */
export interface OAuthGrant<Caller = unknown> {
  /** The `grant_type` value (RFC 6749 section 4, or an extension's URI). */
  readonly type: string;
  /** The caller, authenticated; a refusal is thrown as an AppError naming its OAuth error. */
  authenticate(request: Request, form: FormParameters): Promise<Caller>;
  /** The token for that caller, narrowed by the grant's parameters. */
  issue(caller: Caller, form: FormParameters): Promise<OAuthTokenResponse>;
}

const scopeSyntax = new ScopeConstraint();

/** `scope` and `resource` of a grant that issues an access token: the narrowing of TokenExchangeService.grant. */
export function accessTokenNarrowing(form: FormParameters): TokenNarrowing {
  if (form.scope !== undefined && !scopeSyntax.validate(form.scope)) {
    throw new AppError(ErrorCode.INVALID_ARGUMENT, 'scope must be distinct names separated by single spaces', {
      oauth: { error: 'invalid_scope' },
    });
  }
  return { scope: form.scope, resource: form.resource };
}
