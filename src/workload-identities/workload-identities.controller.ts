import { Body, Controller, Delete, Get, Param, Post, Query, UseInterceptors } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { ErrorCode } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { PageMetaView } from '../common/pagination';
import { UuidPipe } from '../common/validation.pipe';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { ConditionNamesInterceptor } from './condition-names.interceptor';
import { CreateWorkloadIdentityDto } from './dto/create-workload-identity.dto';
import { ListWorkloadIdentitiesQuery } from './dto/list-workload-identities.query';
import {
  WorkloadIdentityListResponse,
  WorkloadIdentityResponse,
  WorkloadIdentityView,
  WorkloadIssuerListResponse,
  WorkloadIssuerView,
} from './dto/workload-identity.view';
import { WorkloadIdentitiesService } from './workload-identities.service';

/** The caller's workload identities (docs/workload-identities.md): keys without secrets, managed as keys are. */
@ApiTags('Workload identities')
@Controller('v1/workload-identities')
export class WorkloadIdentitiesController {
  constructor(private readonly identities: WorkloadIdentitiesService) {}

  @Post()
  @Authenticated({ permissions: ['api_keys:create'] })
  @ApiOperation({
    summary: 'Create a workload identity: tokens of a trusted issuer with this sub (and conditions) act as you',
    description:
      "Scopes as a key's (each one the request itself must have, else 403), expires_at within the organization's " +
      'key policy. 400 with the reason for an unknown or people issuer, an empty subject, or conditions that are not ' +
      'an object of at most 16 string values on claims other than iss, sub, aud, exp, nbf, iat and jti.',
  })
  @ApiCreatedResponse({ type: WorkloadIdentityResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.FAILED_PRECONDITION, ErrorCode.PAYLOAD_TOO_LARGE)
  @UseInterceptors(ConditionNamesInterceptor)
  async create(
    @Caller() principal: Principal,
    @Body() body: CreateWorkloadIdentityDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<WorkloadIdentityResponse> {
    const identity = await this.identities.create(
      principal,
      {
        label: body.label,
        trustedIssuerId: body.trusted_issuer_id,
        subject: body.subject,
        conditions: body.conditions,
        scopes: body.scopes,
        expiresAt: body.expires_at,
      },
      request,
    );
    return { workload_identity: WorkloadIdentityView.from(identity) };
  }

  @Get()
  @Authenticated({ permissions: ['api_keys:read'] })
  @ApiOperation({ summary: "List the caller's workload identities, newest first" })
  @ApiOkResponse({ type: WorkloadIdentityListResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT)
  async list(
    @Caller() principal: Principal,
    @Query() query: ListWorkloadIdentitiesQuery,
  ): Promise<WorkloadIdentityListResponse> {
    const page = await this.identities.list(principal, {
      page: query.page,
      limit: query.limit,
      includeRevoked: query.include_revoked,
    });
    return {
      workload_identities: page.items.map((identity) => WorkloadIdentityView.from(identity)),
      ...PageMetaView.of(page),
    };
  }

  // Before `:id`, which would take "trusted-issuers" for an id.
  @Get('trusted-issuers')
  @Authenticated({ permissions: ['api_keys:create'] })
  @ApiOperation({
    summary: "The organization's trusted issuers of kind workloads: what a new identity may name",
    description:
      'Each with the audience its tokens must carry. The admin CLI adds them (gatehouse trusted-issuer add).',
  })
  @ApiOkResponse({ type: WorkloadIssuerListResponse })
  async trustedIssuers(@Caller() principal: Principal): Promise<WorkloadIssuerListResponse> {
    return {
      trusted_issuers: (await this.identities.workloadIssuers(principal)).map((entry) =>
        WorkloadIssuerView.from(entry),
      ),
    };
  }

  @Get(':id')
  @Authenticated({ permissions: ['api_keys:read'] })
  @ApiOperation({ summary: "Read one of the caller's workload identities" })
  @ApiOkResponse({ type: WorkloadIdentityResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async get(@Caller() principal: Principal, @Param('id', UuidPipe) id: string): Promise<WorkloadIdentityResponse> {
    return { workload_identity: WorkloadIdentityView.from(await this.identities.get(principal, id)) };
  }

  @Delete(':id')
  @Authenticated({ permissions: ['api_keys:revoke'] })
  @ApiOperation({
    summary: 'Revoke a workload identity at once and for good (idempotent)',
    description:
      'The tokens minted through it stop working at once here, and a credential-change event tells every verifier.',
  })
  @ApiOkResponse({ type: WorkloadIdentityResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async revoke(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<WorkloadIdentityResponse> {
    return { workload_identity: WorkloadIdentityView.from(await this.identities.revoke(principal, id, request)) };
  }
}
