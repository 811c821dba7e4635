import { Controller, Get, Patch } from '@nestjs/common';
import { ValidBody } from '../common/validation.pipe';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { ApiErrors } from '../common/openapi';
import { ErrorCode } from '../common/errors';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { OrganizationResponse, OrganizationView } from './dto/organization.view';
import { UpdateOrganizationDto } from './dto/update-organization.dto';
import { OrganizationSettingsService } from './organization-settings.service';

/** The caller's own organization, the one of its token (docs/api.md#organization-settings). */
@ApiTags('Organization')
@Controller('v1/organization')
export class OrganizationSettingsController {
  constructor(private readonly settings: OrganizationSettingsService) {}

  @Get()
  @Authenticated({ anyMember: true })
  @ApiOperation({ summary: "Read the caller's organization and its settings (any member)" })
  @ApiOkResponse({ type: OrganizationResponse })
  async get(@Caller() principal: Principal): Promise<OrganizationResponse> {
    return { organization: OrganizationView.from(await this.settings.get(principal.organizationId)) };
  }

  @Patch()
  @Authenticated({ permissions: ['organization:write'] })
  @ApiOperation({
    summary: "Change the caller's organization settings; absent fields stay as they are",
    description: 'Audited as organization.updated. An empty body changes and records nothing.',
  })
  @ApiOkResponse({ type: OrganizationResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.PAYLOAD_TOO_LARGE)
  async update(
    @Caller() principal: Principal,
    @ValidBody() body: UpdateOrganizationDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<OrganizationResponse> {
    const organization = await this.settings.update(
      principal.organizationId,
      {
        accessTokenLifetime: body.access_token_lifetime,
        maxKeyLifetimeDays: body.max_key_lifetime_days,
        requireKeyAllowlist: body.require_key_allowlist,
      },
      { userId: principal.userId, credentialId: principal.credentialId },
      request,
    );
    return { organization: OrganizationView.from(organization) };
  }
}
