import { Controller, Get, Post, UseInterceptors } from '@nestjs/common';
import { ValidBody } from '../common/validation.pipe';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { ErrorCode } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import { ConditionNamesInterceptor } from './condition-names.interceptor';
import { CreateWorkloadIdentityDto } from './dto/create-workload-identity.dto';
import { WORKLOAD_IDENTITY_ROUTES } from './workload-identity-routes';
import { WorkloadIdentityView, WorkloadIssuerListResponse, WorkloadIssuerView } from './dto/workload-identity.view';
import { WorkloadIdentitiesService } from './workload-identities.service';

/** The caller's workload identities (docs/workload-identities.md): keys without secrets, managed as keys are. */
@ApiTags('Workload identities')
@Controller('v1/workload-identities')
export class WorkloadIdentitiesController extends WORKLOAD_IDENTITY_ROUTES.OwnerRoutes {
  constructor(private readonly identities: WorkloadIdentitiesService) {
    super();
  }

  @Post()
  @Authenticated({ permissions: ['workload_identities:create'] })
  @ApiOperation({
    summary: 'Create a workload identity: tokens of a trusted issuer with this sub (and conditions) act as you',
    description:
      "Scopes as a key's (each one the request itself must have, else 403), expires_at within the organization's " +
      'key policy. 400 with the reason for an unknown or people issuer, an empty subject, or conditions that are not ' +
      'an object of at most 16 string values on claims other than iss, sub, aud, exp, nbf, iat and jti.',
  })
  @ApiCreatedResponse({ type: WORKLOAD_IDENTITY_ROUTES.Response })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.FAILED_PRECONDITION, ErrorCode.PAYLOAD_TOO_LARGE)
  @UseInterceptors(ConditionNamesInterceptor)
  async create(
    @Caller() principal: Principal,
    @ValidBody() body: CreateWorkloadIdentityDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<{ workload_identity: WorkloadIdentityView }> {
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

  // Before `:id` (the inherited routes come after a controller's own), which would take "trusted-issuers" for an id.
  @Get('trusted-issuers')
  @Authenticated({ permissions: ['workload_identities:create'] })
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
}
