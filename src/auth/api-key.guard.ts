import { CanActivate, ExecutionContext, Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { clientAddress } from '../common/client-address';
import { Messages } from '../common/errors';
import { ExchangeRefused } from './key-exchange';
import { ExchangeClient, PresentedKey, TokenExchangeService } from './token-exchange.service';
import type { ApiKeyExchange } from './token.service';

declare module 'express-serve-static-core' {
  interface Request {
    /** Set by ApiKeyGuard: the authenticated exchange (the key, its owner, scopes and expiry). */
    apiKeyExchange?: ApiKeyExchange;
    /** Set by ApiKeyGuard: who asked, for the grant. */
    exchangeClient?: ExchangeClient;
  }
}

/**
 * POST /v1/token authentication in the order of docs/api.md#post-v1token, before the body: the `ApiKey` header, then
 * the exchange's shared steps (TokenExchangeService).
 */
@Injectable()
export class ApiKeyGuard implements CanActivate {
  constructor(private readonly exchange: TokenExchangeService) {}

  async canActivate(context: ExecutionContext): Promise<boolean> {
    const request = context.switchToHttp().getRequest<Request>();
    const client: ExchangeClient = {
      address: clientAddress(request),
      requestId: request.id,
      userAgent: request.headers['user-agent'],
    };
    request.apiKeyExchange = await this.exchange.authenticate(this.presentedKey(request.headers.authorization), client);
    request.exchangeClient = client;
    return true;
  }

  /** Steps 1-3, no I/O: the key named by the header, or the refusal to answer with. */
  private presentedKey(header: string | undefined): PresentedKey | ExchangeRefused {
    if (header === undefined || header === '') {
      return new ExchangeRefused('missing_header', Messages.authorizationHeaderRequired);
    }
    const space = header.indexOf(' ');
    const scheme = space === -1 ? header : header.slice(0, space);
    if (scheme.toLowerCase() !== 'apikey') return new ExchangeRefused('wrong_scheme', Messages.apiKeySchemeRequired);
    const value = space === -1 ? '' : header.slice(space + 1).replace(/^ +/, '');
    return this.exchange.present(value);
  }
}
