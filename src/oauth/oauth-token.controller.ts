import { Controller, Header, HttpCode, Post, Req } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiResponse, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { ScopeConstraint } from '../auth/dto/token-request.dto';
import { AccessTokenResponse } from '../auth/dto/access-token.response';
import { ExchangeRefused } from '../auth/key-exchange';
import { ExchangeClient, PresentedKey, TokenExchangeService } from '../auth/token-exchange.service';
import { clientAddress } from '../common/client-address';
import { AppError, ErrorCode, Messages } from '../common/errors';
import { Public } from '../identity/access.decorators';
import { ClientCredentials, clientCredentials, formParameters } from './client-authentication';
import { OAuthErrorBody } from './openapi';

const UUID_OR_HEX = /^(?:[0-9a-f]{32}|[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12})$/i;
const scopeSyntax = new ScopeConstraint();

function sameId(clientId: string, keyId: string): boolean {
  return clientId.replace(/-/g, '').toLowerCase() === keyId.replace(/-/g, '');
}

/**
 * RFC 6749 section 4.4, the client-credentials grant, for the OAuth clients that exist: the client is the API key
 * (client_id its id, client_secret the whole key). The same exchange as POST /v1/token (TokenExchangeService).
 */
@ApiTags('OAuth')
@Controller('oauth/token')
export class OAuthTokenController {
  constructor(private readonly exchange: TokenExchangeService) {}

  @Post()
  @Public()
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  @ApiOperation({ summary: 'Client-credentials grant: an access token for an API key (RFC 6749 section 4.4)' })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({
    schema: {
      type: 'object',
      required: ['grant_type'],
      properties: {
        grant_type: { type: 'string', enum: ['client_credentials'] },
        client_id: { type: 'string', description: 'The API key id (client_secret_post; or HTTP Basic)' },
        client_secret: { type: 'string', description: 'The whole API key (client_secret_post; or HTTP Basic)' },
        scope: { type: 'string', description: "Permission names separated by spaces, among the key's scopes" },
        resource: { type: 'string', description: "A registered resource server's audience (RFC 8707)" },
      },
    },
  })
  @ApiOkResponse({ type: AccessTokenResponse })
  @ApiResponse({
    status: 400,
    description: 'invalid_request, unsupported_grant_type, invalid_scope, invalid_target',
    type: OAuthErrorBody,
  })
  @ApiResponse({ status: 401, description: 'invalid_client', type: OAuthErrorBody })
  @ApiResponse({ status: 429, description: 'temporarily_unavailable (failure limit)', type: OAuthErrorBody })
  async token(@Req() request: Request): Promise<AccessTokenResponse> {
    const form = formParameters(request);
    if (form.grant_type === undefined) throw new AppError(ErrorCode.INVALID_ARGUMENT, 'grant_type is required');
    if (form.grant_type !== 'client_credentials') {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, 'only client_credentials is supported', {
        oauth: { error: 'unsupported_grant_type' },
      });
    }
    const credentials = clientCredentials(request, form);
    const client: ExchangeClient = {
      address: clientAddress(request),
      requestId: request.id,
      userAgent: request.headers['user-agent'],
    };
    // Refusals are AppErrors (ExchangeRefused, UnknownResource, ...) that name their OAuth error; the exception filter
    // renders them in RFC 6749's shape.
    const exchange = await this.exchange.authenticate(this.presentedKey(credentials), client);
    if (form.scope !== undefined && !scopeSyntax.validate(form.scope)) {
      throw new AppError(ErrorCode.INVALID_ARGUMENT, 'scope must be distinct permission names separated by spaces', {
        oauth: { error: 'invalid_scope' },
      });
    }
    return this.exchange.grant(exchange, { scope: form.scope, resource: form.resource }, client);
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
