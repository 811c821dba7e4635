import { Controller, Delete, Get, Param, Query } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../../audit/request-context';
import { ErrorCode } from '../../common/errors';
import { ApiErrors } from '../../common/openapi';
import { PageMetaView } from '../../common/pagination';
import { UuidPipe } from '../../common/validation.pipe';
import { Authenticated, Caller } from '../../identity/access.decorators';
import type { Principal } from '../../identity/principal';
import {
  OrganizationWorkloadIdentityListResponse,
  OrganizationWorkloadIdentityResponse,
  OrganizationWorkloadIdentityView,
} from '../dto/workload-identity.view';
import { ListOrganizationWorkloadIdentitiesQuery } from './dto/list-organization-workload-identities.query';
import { OrganizationWorkloadIdentitiesService } from './organization-workload-identities.service';

/** Every member's workload identities, for admins, as the organization's keys (docs/workload-identities.md). */
@ApiTags('Workload identities')
@Controller('v1/organization/workload-identities')
export class OrganizationWorkloadIdentitiesController {
  constructor(private readonly organizationIdentities: OrganizationWorkloadIdentitiesService) {}

  @Get()
  @Authenticated({ permissions: ['api_keys:manage'] })
  @ApiOperation({
    summary: "List every member's workload identities in the caller's organization, newest first",
    description:
      "user_id or email narrows the list to one user's identities. Each carries its owner's e-mail address. Paged as GET /v1/workload-identities.",
  })
  @ApiOkResponse({ type: OrganizationWorkloadIdentityListResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT)
  async list(
    @Caller() principal: Principal,
    @Query() query: ListOrganizationWorkloadIdentitiesQuery,
  ): Promise<OrganizationWorkloadIdentityListResponse> {
    const { page, emails } = await this.organizationIdentities.list(principal, {
      userId: query.user_id,
      email: query.email,
      page: query.page,
      limit: query.limit,
      includeRevoked: query.include_revoked,
    });
    return {
      workload_identities: page.items.map((identity) => OrganizationWorkloadIdentityView.withOwner(identity, emails)),
      ...PageMetaView.of(page),
    };
  }

  @Delete(':id')
  @Authenticated({ permissions: ['api_keys:manage'] })
  @ApiOperation({
    summary: "Revoke any workload identity of the caller's organization at once and for good (idempotent)",
    description: "Recorded as workload_identity.revoked with reason admin. Another organization's identity is 404.",
  })
  @ApiOkResponse({ type: OrganizationWorkloadIdentityResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async revoke(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<OrganizationWorkloadIdentityResponse> {
    const { identity, emails } = await this.organizationIdentities.revoke(principal, id, request);
    return { workload_identity: OrganizationWorkloadIdentityView.withOwner(identity, emails) };
  }
}
