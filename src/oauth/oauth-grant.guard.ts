import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { FormParameters, formParameters } from '../common/client-credentials';
import { API_KEY_CLIENT_SCHEME } from '../common/openapi';
import { setCaller } from '../identity/access.decorators';
import type { OAuthGrant } from './grants/oauth-grant';
import { OAuthGrants } from './grants/oauth-grants';

/** The caller of POST /oauth/token: the grant that authenticated it, who that is, and the form for the grant to read. */
export interface OAuthGrantCaller {
  grant: OAuthGrant;
  caller: unknown;
  form: FormParameters;
}

/**
 * POST /oauth/token's scheme: the grant type names how the caller authenticates, and its grant (OAuthGrants) does it:
 * the API key as the client for `client_credentials`, the subject token for the token exchange, nothing for a public
 * client's code or refresh token. The grant's other parameters are its own to read when it issues the token. Refusals are AppErrors that name their OAuth error; the
 * exception filter renders them in RFC 6749's shape.
 */
@Injectable()
export class OAuthGrantGuard implements CanActivate {
  static readonly securityScheme = API_KEY_CLIENT_SCHEME;

  constructor(private readonly grants: OAuthGrants) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const form = formParameters(request);
    const grant = this.grants.of(form.grant_type);
    const caller = await grant.authenticate(request, form);
    setCaller(request, { grant, caller, form } satisfies OAuthGrantCaller);
    return true;
  }
}
