import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { exchangeClient } from '../../auth/api-key.guard';
import type { ExchangeClient } from '../../auth/token-exchange.service';
import type { FormParameters } from '../../common/client-credentials';
import { AppError } from '../../common/errors';
import { CodeGrantService, CodeGrantType } from '../code-grant.service';
import type { OAuthTokenResponse } from '../openapi';
import type { OAuthGrant } from './oauth-grant';

/**
 * A public client's grant (docs/mcp.md#authorization-code): no client authentication, the code or the refresh token is
 * the proof, checked when the token is issued (CodeGrantService).
 * (Injectable for the constructor's parameter types, which its subclasses inherit.)
 */
@Injectable()
abstract class PublicClientGrant implements OAuthGrant<ExchangeClient> {
  abstract readonly type: CodeGrantType;

  constructor(private readonly codeGrants: CodeGrantService) {}

  authenticate(request: Request): Promise<ExchangeClient> {
    if (request.headers.authorization !== undefined) {
      throw new AppError('client_authentication_not_accepted');
    }
    return Promise.resolve(exchangeClient(request, 'oauth_token'));
  }

  issue(client: ExchangeClient, form: FormParameters): Promise<OAuthTokenResponse> {
    return this.codeGrants.token(this.type, form, { id: client.requestId, ip: client.address });
  }
}

/** RFC 6749 section 4.1 with PKCE (RFC 7636): the code the consent page issued, for an access and a refresh token. */
@Injectable()
export class AuthorizationCodeGrant extends PublicClientGrant {
  readonly type = 'authorization_code';
}

/** RFC 6749 section 6: a grant's refresh token, rotated, for the next access token. */
@Injectable()
export class RefreshTokenGrant extends PublicClientGrant {
  readonly type = 'refresh_token';
}
