import { Controller, Delete, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../../audit/request-context';
import { ApiErrors } from '../../common/openapi';
import { ErrorCode } from '../../common/errors';
import { PageMetaView } from '../../common/pagination';
import { UuidPipe } from '../../common/validation.pipe';
import { Authenticated, Caller } from '../../identity/access.decorators';
import type { Principal } from '../../identity/principal';
import {
  OrganizationApiKeyListResponse,
  OrganizationApiKeyResponse,
  OrganizationApiKeyView,
} from '../dto/api-key.view';
import { ListOrganizationApiKeysQuery } from './dto/list-organization-api-keys.query';
import { OrganizationKeysService } from './organization-keys.service';

/** Organization key management (docs/api.md#organization-key-management): every member's keys, for admins. */
@ApiTags('API keys')
@Controller('v1/organization/api-keys')
export class OrganizationApiKeysController {
  constructor(private readonly organizationKeys: OrganizationKeysService) {}

  @Get()
  @Authenticated({ permissions: ['api_keys:manage'] })
  @ApiOperation({
    summary: "List every member's keys in the caller's organization, newest first (never a secret)",
    description:
      "user_id or email narrows the list to one user's keys. Each key carries its owner's e-mail address. Paged as GET /v1/user-api-keys.",
  })
  @ApiOkResponse({ type: OrganizationApiKeyListResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT)
  async list(
    @Caller() principal: Principal,
    @Query() query: ListOrganizationApiKeysQuery,
  ): Promise<OrganizationApiKeyListResponse> {
    const { page, emails } = await this.organizationKeys.list(principal, {
      userId: query.user_id,
      email: query.email,
      page: query.page,
      limit: query.limit,
      includeRevoked: query.include_revoked,
    });
    return {
      api_keys: page.items.map((key) => OrganizationApiKeyView.withOwner(key, emails)),
      ...PageMetaView.of(page),
    };
  }

  @Delete(':id')
  @Authenticated({ permissions: ['api_keys:manage'] })
  @ApiOperation({
    summary: "Revoke any key of the caller's organization at once and for good (idempotent)",
    description: "Recorded as api_key.revoked with reason admin. Another organization's key is 404.",
  })
  @ApiOkResponse({ type: OrganizationApiKeyResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async revoke(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<OrganizationApiKeyResponse> {
    const { key, emails } = await this.organizationKeys.revoke(principal, id, request);
    return { api_key: OrganizationApiKeyView.withOwner(key, emails) };
  }
}
