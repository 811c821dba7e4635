import { Body, Controller, Header, HttpCode, Logger, Post, Req, UseGuards } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiSecurity, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { ApiKeysService } from '../api-keys/api-keys.service';
import { AppError, ErrorCode, Messages } from '../common/errors';
import { API_KEY_SCHEME, ApiErrors } from '../common/openapi';
import { ApiKeyGuard } from './api-key.guard';
import { Public } from '../identity/access.decorators';
import { Metrics } from '../metrics/metrics';
import { EmptyBodyPipe } from './dto/empty-body.dto';
import { AccessTokenResponse } from './dto/access-token.response';
import { TokenService } from './token.service';

@ApiTags('Tokens')
@Controller('v1/token')
export class TokenController {
  private readonly logger = new Logger(TokenController.name);

  constructor(
    private readonly tokens: TokenService,
    private readonly apiKeys: ApiKeysService,
    private readonly metrics: Metrics,
  ) {}

  /** Exchanges an API key (Authorization: ApiKey ...) for a short-lived access token. */
  @Post()
  @Public()
  @ApiOperation({ summary: 'Exchange an API key (`Authorization: ApiKey <key>`) for a short-lived access token' })
  @ApiSecurity(API_KEY_SCHEME)
  @ApiOkResponse({ type: AccessTokenResponse })
  @ApiErrors(400, 401, 429, 500, 503)
  @UseGuards(ApiKeyGuard)
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  async exchange(@Req() request: Request, @Body(EmptyBodyPipe) _body: unknown): Promise<AccessTokenResponse> {
    const exchange = request.apiKeyExchange!;
    let accessToken: string;
    try {
      accessToken = await this.tokens.mint({ ...exchange, tokenUse: 'access' });
    } catch (error) {
      this.logger.error({ err: error }, 'signing an access token failed');
      this.metrics.tokenExchange('mint_failed');
      throw new AppError(ErrorCode.INTERNAL, Messages.mintFailed);
    }
    this.apiKeys.recordUse(exchange.apiKeyId);
    this.metrics.tokenExchange('success');
    return { access_token: accessToken, token_type: 'Bearer', expires_in: exchange.lifetimeSeconds };
  }
}
