import { Controller, Get } from '@nestjs/common';
import { ValidQuery } from '../common/validation.pipe';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ErrorCode } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { CredentialUsageService } from './credential-usage.service';
import { BusiestQuery, BusiestResponse } from './dto/usage.dto';

/** The organization's usage over time across kinds, for admins (docs/api.md#usage-over-time). */
@ApiTags('Usage')
@Controller('v1/organization/usage')
export class CredentialUsageController {
  constructor(private readonly usage: CredentialUsageService) {}

  @Get('top')
  @Authenticated({ permissions: ['api_keys:manage', 'workload_identities:manage'] })
  @ApiOperation({
    summary: "The organization's busiest keys and workload identities in a range (default: the last 24 hours)",
    description: 'Most uses, successful and refused, first; each with its label, status and owner.',
  })
  @ApiOkResponse({ type: BusiestResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT)
  top(@Caller() principal: Principal, @ValidQuery() query: BusiestQuery): Promise<BusiestResponse> {
    return this.usage.busiest(principal, query);
  }
}
