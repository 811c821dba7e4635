import { Controller, Delete, Get, Param, Post } from '@nestjs/common';
import { ApiCreatedResponse, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { CurrentRequestContext, RequestContext } from '../../audit/request-context';
import { ErrorCode } from '../../common/errors';
import { ApiErrors } from '../../common/openapi';
import { UuidPipe, ValidBody } from '../../common/validation.pipe';
import { Authenticated, Caller } from '../../identity/access.decorators';
import type { Principal } from '../../identity/principal';
import {
  CreateOrganizationClientDto,
  OAuthClientCreatedResponse,
  OAuthClientListResponse,
  OAuthClientResponse,
  OAuthClientView,
} from './dto/organization-client.dto';
import { ClientActor, RegisteredClients } from './registered-clients.service';

function actor(principal: Principal): ClientActor {
  return { organizationId: principal.organizationId, userId: principal.userId, credentialId: principal.credentialId };
}

/**
 * The OAuth clients an organization's admins register for internal apps (docs/mcp.md#clients): usable in the
 * authorization code grant by the organization's members only; another organization's are 404 here.
 */
@ApiTags('OAuth clients')
@Controller('v1/organization/oauth-clients')
export class OrganizationClientsController {
  constructor(private readonly clients: RegisteredClients) {}

  @Get()
  @Authenticated({ permissions: ['organization:write'] })
  @ApiOperation({ summary: "The organization's registered OAuth clients, newest first (never their secrets)" })
  @ApiOkResponse({ type: OAuthClientListResponse })
  async list(@Caller() principal: Principal): Promise<OAuthClientListResponse> {
    return {
      oauth_clients: (await this.clients.listForOrganization(principal.organizationId)).map(OAuthClientView.from),
    };
  }

  @Post()
  @Authenticated({ permissions: ['organization:write'] })
  @ApiOperation({
    summary: 'Register an OAuth client for an internal app',
    description:
      'Recorded as oauth_client.created. A confidential client gets a client_secret, shown in this answer only.',
  })
  @ApiCreatedResponse({ type: OAuthClientCreatedResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT)
  async create(
    @Caller() principal: Principal,
    @ValidBody() body: CreateOrganizationClientDto,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<OAuthClientCreatedResponse> {
    const { client, clientSecret } = await this.clients.createForOrganization(
      actor(principal),
      { name: body.name, redirectUris: body.redirect_uris, confidential: body.confidential ?? false },
      request,
    );
    return { oauth_client: OAuthClientView.from(client), client_secret: clientSecret };
  }

  @Delete(':id')
  @Authenticated({ permissions: ['organization:write'] })
  @ApiOperation({
    summary: "Remove one of the organization's OAuth clients",
    description:
      'Its grants are revoked with it (their tokens refused at once, grant.revoked with reason client_removed). ' +
      "Recorded as oauth_client.removed. Another organization's client is 404.",
  })
  @ApiOkResponse({ type: OAuthClientResponse })
  @ApiErrors(ErrorCode.INVALID_ARGUMENT, ErrorCode.NOT_FOUND)
  async remove(
    @Caller() principal: Principal,
    @Param('id', UuidPipe) id: string,
    @CurrentRequestContext() request: RequestContext,
  ): Promise<OAuthClientResponse> {
    return {
      oauth_client: OAuthClientView.from(await this.clients.removeForOrganization(actor(principal), id, request)),
    };
  }
}
