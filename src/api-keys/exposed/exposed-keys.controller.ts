import { Controller, HttpCode, Post, UseGuards } from '@nestjs/common';
import { ValidBody } from '../../common/validation.pipe';
import { ApiAcceptedResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../../audit/request-context';
import { ApiErrors } from '../../common/openapi';
import { ErrorCode } from '../../common/errors';
import { Public } from '../../identity/access.decorators';
import { ReportExposedKeysDto } from './dto/report-exposed-keys.dto';
import { ExposedKeysService } from './exposed-keys.service';
import { ExposedReportLimitGuard } from './exposed-report-limit.guard';

@ApiTags('API keys')
@Controller('v1/api-keys')
export class ExposedKeysController {
  constructor(private readonly exposed: ExposedKeysService) {}

  /** docs/api.md#post-v1api-keysexposed */
  @Post('exposed')
  @Public()
  @UseGuards(ExposedReportLimitGuard)
  @HttpCode(202)
  @ApiOperation({
    summary: 'Report exposed API keys (public, for secret scanners): each real, active one is revoked at once',
    description:
      'The answer is 202 `{}` for every well-formed body, whatever the keys were, and comes at the same time either way. At most EXPOSED_REPORTS_PER_HOUR (60) requests per client address per hour.',
  })
  @ApiAcceptedResponse({
    description: 'Accepted: every reported value that was an ACTIVE key with its right secret is now REVOKED',
    schema: { type: 'object', additionalProperties: false, example: {} },
  })
  @ApiErrors(
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.PAYLOAD_TOO_LARGE,
    ErrorCode.RESOURCE_EXHAUSTED,
    ErrorCode.INTERNAL,
    ErrorCode.UNAVAILABLE,
  )
  async report(
    @ValidBody() body: ReportExposedKeysDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<Record<string, never>> {
    await this.exposed.report(body.keys, request);
    return {};
  }
}
