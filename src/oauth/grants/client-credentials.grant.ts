import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { ApiKeyCaller, exchangeClient } from '../../auth/api-key.guard';
import { ExchangeRefused } from '../../auth/key-exchange';
import { PresentedKey, TokenExchangeService } from '../../auth/token-exchange.service';
import { ClientCredentials, clientCredentials, FormParameters } from '../../common/client-credentials';
import type { OAuthTokenResponse } from '../openapi';
import { accessTokenNarrowing, OAuthGrant } from './oauth-grant';

const UUID_OR_HEX = /^(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;

function sameId(clientId: string, keyId: string): boolean {
  return clientId.replace(/-/g, '').toLowerCase() === keyId.replace(/-/g, '');
}

/**
 * RFC 6749 section 4.4: the client is an API key (client_id its id, client_secret the whole key, by HTTP Basic or the
 * form), through the same exchange as POST /v1/token (TokenExchangeService); `scope` and `resource` narrow the token.
 */
@Injectable()
export class ClientCredentialsGrant implements OAuthGrant<ApiKeyCaller> {
  readonly type = 'client_credentials';

  constructor(private readonly exchange: TokenExchangeService) {}

  async authenticate(request: Request, form: FormParameters): Promise<ApiKeyCaller> {
    const client = exchangeClient(request, 'oauth_token');
    const exchange = await this.exchange.authenticateKey(this.presentedKey(clientCredentials(request, form)), client);
    return { exchange, client };
  }

  issue(caller: ApiKeyCaller, form: FormParameters): Promise<OAuthTokenResponse> {
    return this.exchange.grant(caller.exchange, accessTokenNarrowing(form), caller.client);
  }

  /** The key in client_secret, named by client_id (its id, dashed or as in the key); else a counted refusal. */
  private presentedKey(credentials: ClientCredentials): PresentedKey | ExchangeRefused {
    const presented = this.exchange.present(credentials.clientSecret);
    if (presented instanceof ExchangeRefused) return presented;
    const { clientId } = credentials;
    const { keyId } = presented[0];
    // The id as the API shows it matches at once; else compared the long way (undashed, any case).
    if (clientId !== keyId && !(UUID_OR_HEX.test(clientId) && sameId(clientId, keyId))) {
      return new ExchangeRefused('invalid_credentials');
    }
    return presented;
  }
}
