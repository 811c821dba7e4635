import { Controller, Delete, Get, Param } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { ErrorCode } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { UuidPipe } from '../common/validation.pipe';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { GrantListResponse, GrantResponse, GrantView } from './dto/grant.view';
import { GrantsService } from './grants.service';

/** The apps a person connected (docs/mcp.md#grants): their own grants, and an organization's for its admins. */
@ApiTags('Grants')
@Controller('v1')
export class GrantsController {
  constructor(private readonly grants: GrantsService) {}

  @Get('grants')
  @Authenticated({ permissions: ['api_keys:read'] })
  @ApiOperation({ summary: "The caller's grants (connected apps) in this organization, newest first" })
  @ApiOkResponse({ type: GrantListResponse })
  async list(@Caller() principal: Principal): Promise<GrantListResponse> {
    return { grants: (await this.grants.listForOwner(principal)).map(GrantView.from) };
  }

  @Delete('grants/:id')
  @Authenticated({ permissions: ['api_keys:revoke'] })
  @ApiOperation({
    summary: "Revoke one of the caller's grants (idempotent)",
    description:
      'Its access tokens are refused at once here and by verifiers within a second (a credential-change event on ' +
      "the revocation feed), its refresh tokens deleted. Recorded as grant.revoked. Anyone else's grant is 404.",
  })
  @ApiOkResponse({ type: GrantResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async revoke(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<GrantResponse> {
    return { grant: GrantView.from(await this.grants.revoke(principal, id, { asAdmin: false, request })) };
  }

  @Get('organization/grants')
  @Authenticated({ permissions: ['api_keys:manage'] })
  @ApiOperation({ summary: "Every member's grants in the caller's organization, newest first" })
  @ApiOkResponse({ type: GrantListResponse })
  async listOrganization(@Caller() principal: Principal): Promise<GrantListResponse> {
    return { grants: (await this.grants.listForOrganization(principal.organizationId)).map(GrantView.from) };
  }

  @Delete('organization/grants/:id')
  @Authenticated({ permissions: ['api_keys:manage'] })
  @ApiOperation({
    summary: "Revoke any grant of the caller's organization (idempotent)",
    description: "As DELETE /v1/grants/{id}, recorded with reason admin. Another organization's grant is 404.",
  })
  @ApiOkResponse({ type: GrantResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async revokeAny(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<GrantResponse> {
    return { grant: GrantView.from(await this.grants.revoke(principal, id, { asAdmin: true, request })) };
  }
}
