import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { ApiKeyCaller, exchangeClient } from '../auth/api-key.guard';
import { ExchangeRefused } from '../auth/key-exchange';
import { PresentedKey, TokenExchangeService } from '../auth/token-exchange.service';
import { AppError, ErrorCode, Messages } from '../common/errors';
import { API_KEY_CLIENT_SCHEME } from '../common/openapi';
import { setCaller } from '../identity/access.decorators';
import { ClientCredentials, clientCredentials, formParameters } from '../common/client-credentials';

const UUID_OR_HEX = /^(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

function sameId(clientId: string, keyId: string): boolean {
  return clientId.replace(/-/g, '').toLowerCase() === keyId.replace(/-/g, '');
}

/** The caller of POST /oauth/token: who the grant authenticated. */
export type OAuthGrantCaller = { grant: 'client_credentials' } & ApiKeyCaller;

/**
 * POST /oauth/token's scheme: the grant type names how the caller authenticates. `client_credentials` (RFC 6749 section
 * 4.4): the client is an API key (client_id its id, client_secret the whole key, by HTTP Basic or the form), through
 * the same exchange as POST /v1/token (TokenExchangeService). Refusals are AppErrors that name their OAuth error; the
 * exception filter renders them in RFC 6749's shape.
 */
@Injectable()
export class OAuthGrantGuard implements CanActivate {
  static readonly securityScheme = API_KEY_CLIENT_SCHEME;

  constructor(private readonly exchange: TokenExchangeService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const form = formParameters(request);
    if (form.grant_type === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'grant_type is required');
    if (form.grant_type !== 'client_credentials') {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, 'only client_credentials is supported', {
        oauth: { error: 'unsupported_grant_type' },
      });
    }
    const client = exchangeClient(request);
    const exchange = await this.exchange.authenticateKey(this.presentedKey(clientCredentials(request, form)), client);
    setCaller(request, { grant: 'client_credentials', exchange, client } satisfies OAuthGrantCaller);
    return true;
  }

  /** The key in client_secret, named by client_id (its id, dashed or as in the key); else a counted refusal. */
  private presentedKey(credentials: ClientCredentials): PresentedKey | ExchangeRefused {
    const presented = this.exchange.present(credentials.clientSecret);
    if (presented instanceof ExchangeRefused) return presented;
    const { clientId } = credentials;
    const { keyId } = presented[0];
    // The id as the API shows it matches at once; else compared the long way (undashed, any case).
    if (clientId !== keyId && !(UUID_OR_HEX.test(clientId) && sameId(clientId, keyId))) {
      return new ExchangeRefused('invalid_credentials', Messages.invalidApiKeyCredentials);
    }
    return presented;
  }
}
