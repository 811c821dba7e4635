import { Body, Controller, Header, HttpCode, Post, Req, UseGuards } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { invalidArgument } from '../common/errors';
import { API_KEY_SCHEME, ApiErrors } from '../common/openapi';
import { ApiKeyGuard } from './api-key.guard';
import { Public } from '../identity/access.decorators';
import { TokenRequestDto, TokenRequestPipe } from './dto/token-request.dto';
import { AccessTokenResponse } from './dto/access-token.response';
import type { TokenNarrowing } from './token.service';
import { TokenExchangeService } from './token-exchange.service';

@ApiTags('Tokens')
@Controller('v1/token')
export class TokenController {
  constructor(private readonly exchanges: TokenExchangeService) {}

  /**
   * Exchanges an API key (Authorization: ApiKey ...) for a short-lived access token, optionally narrowed by the body.
   */
  @Post()
  @Public()
  @ApiOperation({ summary: 'Exchange an API key (`Authorization: ApiKey <key>`) for a short-lived access token' })
  @ApiSecurity(API_KEY_SCHEME)
  @ApiBody({ type: TokenRequestDto, required: false })
  @ApiOkResponse({ type: AccessTokenResponse })
  @ApiErrors(400, 401, 429, 500, 503)
  @UseGuards(ApiKeyGuard)
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  async exchange(
    @Req() request: Request,
    // An interface type: the global validation pipe leaves it to TokenRequestPipe.
    @Body(TokenRequestPipe) narrowing: TokenNarrowing,
  ): Promise<AccessTokenResponse> {
    // A body of another type or malformed JSON, held by configureHttp until the key had passed.
    if (request.unreadableBody) throw invalidArgument();
    return this.exchanges.grant(request.apiKeyExchange!, narrowing, request.exchangeClient!);
  }
}
