import { Controller, Header, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiErrors } from '../common/openapi';
import { ErrorCode } from '../common/errors';
import { Authenticated, Caller } from '../identity/access.decorators';
import { ApiKeyCaller, ApiKeyGuard } from './api-key.guard';
import { TokenRequest, TokenRequestDto } from './dto/token-request.dto';
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
  @Authenticated(ApiKeyGuard)
  @ApiOperation({ summary: 'Exchange an API key (`Authorization: ApiKey <key>`) for a short-lived access token' })
  @ApiBody({ type: TokenRequestDto, required: false })
  @ApiOkResponse({ type: AccessTokenResponse })
  @ApiErrors(
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.UNAUTHENTICATED,
    ErrorCode.PERMISSION_DENIED,
    ErrorCode.RESOURCE_EXHAUSTED,
    ErrorCode.INTERNAL,
    ErrorCode.UNAVAILABLE,
  )
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  async exchange(
    @Caller() caller: ApiKeyCaller,
    @TokenRequest() narrowing: TokenNarrowing,
  ): Promise<AccessTokenResponse> {
    return this.exchanges.grant(caller.exchange, narrowing, caller.client);
  }
}
