import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { clientAddress } from '../common/client-address';
import { API_KEY_SCHEME } from '../common/openapi';
import { setCaller } from '../identity/access.decorators';
import { ExchangeRefused } from './key-exchange';
import { ExchangeClient, PresentedKey, TokenExchangeService } from './token-exchange.service';
import type { ApiKeyExchange } from './token.service';

/** The caller of an API key's exchange: the key, its owner, scopes and expiry; and who asked, for the grant. */
export interface ApiKeyCaller {
  exchange: ApiKeyExchange;
  client: ExchangeClient;
}

/** Who asks, for the failure limit, the audit trail and the key's usage fields; and where (usage over time). */
export function exchangeClient(request: Request, channel: ExchangeClient['channel']): ExchangeClient {
  return { address: clientAddress(request), requestId: request.id, userAgent: request.headers['user-agent'], channel };
}

/**
 * The `ApiKey` scheme (POST /v1/token), in the order of docs/api.md#post-v1token, before the body: the header, then the
 * exchange's shared steps (TokenExchangeService). The caller is an ApiKeyCaller.
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  static readonly securityScheme = API_KEY_SCHEME;

  constructor(private readonly exchange: TokenExchangeService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const client = exchangeClient(request, 'key_exchange');
    const exchange = await this.exchange.authenticateKey(this.presentedKey(request.headers.authorization), client);
    setCaller(request, { exchange, client } satisfies ApiKeyCaller);
    return true;
  }

  /** Steps 1-3, no I/O: the key named by the header, or the refusal to answer with. */
  private presentedKey(header: string | undefined): PresentedKey | ExchangeRefused {
    if (header === undefined || header === '') {
      return new ExchangeRefused('missing_header');
    }
    const space = header.indexOf(' ');
    const scheme = space === -1 ? header : header.slice(0, space);
    if (scheme.toLowerCase() !== 'apikey') return new ExchangeRefused('wrong_scheme');
    const value = space === -1 ? '' : header.slice(space + 1).replace(/^ +/, '');
    return this.exchange.present(value);
  }
}
