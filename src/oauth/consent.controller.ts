import { Controller, Get, Header, HttpCode, Post } from '@nestjs/common';
import { ValidBody, ValidQuery } from '../common/validation.pipe';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { ErrorCode } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { AuthorizationService } from './authorization.service';
import { ConsentDecisionDto, ConsentDecisionResponse, ConsentQuery, ConsentView } from './dto/consent.dto';

/**
 * The console's consent page (docs/mcp.md#consent): with the person's session token only (an Authorization header, no
 * cookie: no other site can make the browser send it), what is asked, and the decision.
 */
@ApiTags('OAuth')
@Controller('v1/oauth/consent')
export class ConsentController {
  constructor(private readonly authorization: AuthorizationService) {}

  @Get()
  @Authenticated({ sessionOnly: true })
  @Header('Cache-Control', 'no-store')
  @ApiOperation({ summary: 'What an authorization request asks the signed-in person (the consent page)' })
  @ApiOkResponse({ type: ConsentView })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.FAILED_PRECONDITION)
  async describe(@Caller() principal: Principal, @ValidQuery() query: ConsentQuery): Promise<ConsentView> {
    return ConsentView.from(await this.authorization.describe(principal, query.request));
  }

  @Post()
  @Authenticated({ sessionOnly: true })
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @ApiOperation({
    summary: "The person's decision: Allow (a grant and a one-use code) or Deny",
    description: 'Recorded as grant.granted when it grants something new. The answer names where the browser goes.',
  })
  @ApiOkResponse({ type: ConsentDecisionResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.FAILED_PRECONDITION)
  async decide(
    @Caller() principal: Principal,
    @ValidBody() body: ConsentDecisionDto,
    @CurrentRequestContext() context: RequestContext,
  ): Promise<ConsentDecisionResponse> {
    const allow = body.decision === 'allow';
    return { redirect_to: await this.authorization.decide(principal, body.request, allow, context) };
  }
}
