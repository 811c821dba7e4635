import { Controller, Delete, Get, HttpCode, Post, Put } from '@nestjs/common';
import { ValidBody } from '../common/validation.pipe';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../audit/request-context';
import { AppError, ErrorCode } from '../common/errors';
import { ApiErrors } from '../common/openapi';
import { Authenticated, Caller } from '../identity/access.decorators';
import type { Principal } from '../identity/principal';
import {
  ChangedSingleSignOnResponse,
  DiscoveryResponse,
  DiscoveryView,
  SavedSingleSignOnResponse,
  SaveSingleSignOnDto,
  SetAllowedOriginsDto,
  SingleSignOnResponse,
  SingleSignOnView,
  TestSingleSignOnDto,
} from './dto/single-sign-on.dto';
import { IssuerChangeBy, TrustedIssuerError, TrustedIssuersService } from './trusted-issuers.service';

const changeBy = (principal: Principal, request: RequestContext): IssuerChangeBy => ({
  actorUserId: principal.userId,
  actorApiKeyId: principal.credentialId ?? null,
  request,
});

/**
 * The service's refusals as the API answers them: the reason and the message, without the details the admin CLI words
 * its flags from (src/cli/error-wording.ts), but for `foreign_origin`: an endpoint's origin that is neither the
 * issuer's nor an allowed one.
 */
async function rendered<T>(work: () => Promise<T>): Promise<T> {
  try {
    return await work();
  } catch (error) {
    if (error instanceof TrustedIssuerError) {
      // The origin a discovery document placed an endpoint on, unallowed: the console offers to allow it.
      const foreignOrigin = error.details.foreignOrigin;
      throw new AppError(error.reason, {
        message: error.message,
        details: typeof foreignOrigin === 'string' ? { foreign_origin: foreignOrigin } : {},
      });
    }
    throw error;
  }
}

/**
 * The organization's single sign-on, set up by its admins (docs/api.md#single-sign-on-set-up): its people issuer,
 * through federation's trusted issuers and their rules (TrustedIssuersService), as `trusted-issuer add --kind people`.
 */
@ApiTags('Single sign-on')
@Controller('v1/organization/single-sign-on')
export class SingleSignOnController {
  constructor(private readonly issuers: TrustedIssuersService) {}

  @Get()
  @Authenticated({ permissions: ['organization:write'] })
  @ApiOperation({ summary: "The organization's people issuer, or null (never its client secret)" })
  @ApiOkResponse({ type: SingleSignOnResponse })
  async get(@Caller() principal: Principal): Promise<SingleSignOnResponse> {
    const entry = await this.issuers.peopleIssuerOfOrganization(principal.organizationId);
    return { single_sign_on: entry === null ? null : SingleSignOnView.from(entry) };
  }

  @Put()
  @Authenticated({ permissions: ['organization:write'] })
  @ApiOperation({
    summary: "Set the organization's people issuer: added, or changed in place",
    description:
      'Its discovery document must pass first (as trusted-issuer add checks it, with allowed_origins as ' +
      '--allow-origin); the answer names the redirect URI to register there. Audited as trusted_issuer.added or ' +
      'trusted_issuer.updated (reason people; changed allowed origins add reason allowed_origins). Discoveries: at ' +
      'most 10 a minute per organization with the test.',
  })
  @ApiOkResponse({ type: SavedSingleSignOnResponse })
  @ApiErrors(
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.FAILED_PRECONDITION,
    ErrorCode.PAYLOAD_TOO_LARGE,
    ErrorCode.RESOURCE_EXHAUSTED,
  )
  async save(
    @Caller() principal: Principal,
    @ValidBody() body: SaveSingleSignOnDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<SavedSingleSignOnResponse> {
    const saved = await rendered(() =>
      this.issuers.savePeople(
        principal.organizationId,
        {
          issuer: body.issuer,
          clientId: body.client_id,
          clientSecret: body.client_secret,
          tokenEndpointAuth: body.token_endpoint_auth,
          emailDomains: body.email_domains ?? [],
          jitRole: body.jit_role,
          allowedOrigins: body.allowed_origins,
        },
        changeBy(principal, request),
      ),
    );
    return { single_sign_on: SingleSignOnView.from(saved.entry), redirect_uri: saved.redirectUri ?? '' };
  }

  @Put('allowed-origins')
  @Authenticated({ permissions: ['organization:write'] })
  @ApiOperation({
    summary: "Replace the allowed origins of the organization's people issuer",
    description:
      "The origins besides the issuer's own where its discovery document may place its key set and endpoints, under " +
      'the rules of trusted-issuer set-origins: each must be a https origin Gatehouse may call, and the document must ' +
      'pass with them. Audited as trusted_issuer.updated (reason allowed_origins). None set up: 404. Discoveries: at ' +
      'most 10 a minute per organization with the test and saving.',
  })
  @ApiOkResponse({ type: ChangedSingleSignOnResponse })
  @ApiErrors(
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.FAILED_PRECONDITION,
    ErrorCode.NOT_FOUND,
    ErrorCode.PAYLOAD_TOO_LARGE,
    ErrorCode.RESOURCE_EXHAUSTED,
  )
  async setAllowedOrigins(
    @Caller() principal: Principal,
    @ValidBody() body: SetAllowedOriginsDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<ChangedSingleSignOnResponse> {
    const entry = await rendered(() =>
      this.issuers.setPeopleAllowedOrigins(
        principal.organizationId,
        body.allowed_origins,
        changeBy(principal, request),
      ),
    );
    return { single_sign_on: SingleSignOnView.from(entry) };
  }

  @Delete()
  @Authenticated({ permissions: ['organization:write'] })
  @ApiOperation({
    summary: "End the organization's single sign-on: its people issuer is removed",
    description: 'Audited as trusted_issuer.removed. Sessions it gave end with their hour. None set up: 404.',
  })
  @ApiOkResponse({ type: SingleSignOnResponse })
  @ApiErrors(ErrorCode.NOT_FOUND)
  async remove(
    @Caller() principal: Principal,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<SingleSignOnResponse> {
    const entry = await this.issuers.removePeople(principal.organizationId, changeBy(principal, request));
    return { single_sign_on: SingleSignOnView.from(entry) };
  }

  @Post('test')
  @HttpCode(200)
  @Authenticated({ permissions: ['organization:write'] })
  @ApiOperation({
    summary: "Test the connection: fetch and check the issuer's discovery document, store nothing",
    description:
      'What single sign-on would use (endpoints, key set, client authentication, algorithms) and the redirect URI ' +
      'to register; a refusal says what is wrong (400 issuer_invalid, allowed_origin_invalid, issuer_discovery_failed ' +
      'with foreign_origin when an endpoint is on an origin not allowed). At most 10 a minute per organization with ' +
      'saving (429 too_many_issuer_tests).',
  })
  @ApiOkResponse({ type: DiscoveryResponse })
  @ApiErrors(
    ErrorCode.INVALID_ARGUMENT,
    ErrorCode.FAILED_PRECONDITION,
    ErrorCode.PAYLOAD_TOO_LARGE,
    ErrorCode.RESOURCE_EXHAUSTED,
  )
  async test(@Caller() principal: Principal, @ValidBody() body: TestSingleSignOnDto): Promise<DiscoveryResponse> {
    const found = await rendered(() =>
      this.issuers.testPeople(principal.organizationId, {
        issuer: body.issuer,
        tokenEndpointAuth: body.token_endpoint_auth,
        allowedOrigins: body.allowed_origins,
      }),
    );
    return { discovery: DiscoveryView.from(found.metadata, found.redirectUri ?? '') };
  }
}
