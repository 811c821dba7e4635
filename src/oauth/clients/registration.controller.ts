import { Controller, Header, HttpCode, Post, Req, UseGuards } from '@nestjs/common';
import { ApiBody, ApiCreatedResponse, ApiOperation, ApiProperty, ApiTags } from '@nestjs/swagger';
import type { Request } from 'express';
import { CurrentRequestContext, RequestContext } from '../../audit/request-context';
import { ErrorCode } from '../../common/errors';
import { ApiOAuthErrors } from '../../common/openapi';
import { Public } from '../../identity/access.decorators';
import { OAuthErrorBody } from '../openapi';
import { CLIENT_GRANT_TYPES, CLIENT_RESPONSE_TYPES } from './client-registration';
import { RegisteredClients } from './registered-clients.service';
import { RegistrationLimitGuard } from './registration-limit.guard';

/** RFC 7591 section 3.2.1's answer: the client's id and the metadata kept. */
export class ClientRegistrationResponse {
  @ApiProperty({ format: 'uuid' })
  client_id: string;
  @ApiProperty({ description: 'When it was registered (seconds since the epoch)' })
  client_id_issued_at: number;
  @ApiProperty()
  client_name: string;
  @ApiProperty({ type: [String] })
  redirect_uris: string[];
  @ApiProperty({ type: [String], example: CLIENT_GRANT_TYPES })
  grant_types: string[];
  @ApiProperty({ type: [String], example: CLIENT_RESPONSE_TYPES })
  response_types: string[];
  @ApiProperty({ enum: ['none'] })
  token_endpoint_auth_method: 'none';
}

/**
 * POST /oauth/register (docs/mcp.md#dynamic-client-registration): dynamic client registration (RFC 7591) of public
 * clients, while the operator has it on (OAUTH_DYNAMIC_REGISTRATION), a few per client address an hour.
 */
@ApiTags('OAuth')
@Controller('oauth/register')
export class RegistrationController {
  constructor(private readonly clients: RegisteredClients) {}

  @Post()
  @Public()
  @UseGuards(RegistrationLimitGuard)
  @HttpCode(201)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  @ApiOperation({
    summary: 'Dynamic client registration (RFC 7591): a public client of the authorization code grant',
    description:
      'Off unless OAUTH_DYNAMIC_REGISTRATION=on (then 404). redirect_uris: https, or http on a loopback host; ' +
      'token_endpoint_auth_method none. The client is removed once unused for OAUTH_DYNAMIC_CLIENT_IDLE_DAYS.',
  })
  @ApiBody({
    schema: {
      type: 'object',
      required: ['redirect_uris'],
      properties: {
        redirect_uris: { type: 'array', items: { type: 'string' }, maxItems: 10 },
        client_name: { type: 'string', maxLength: 255 },
        token_endpoint_auth_method: { type: 'string', enum: ['none'] },
        grant_types: { type: 'array', items: { type: 'string', enum: [...CLIENT_GRANT_TYPES] } },
        response_types: { type: 'array', items: { type: 'string', enum: [...CLIENT_RESPONSE_TYPES] } },
      },
    },
  })
  @ApiCreatedResponse({ type: ClientRegistrationResponse })
  @ApiOAuthErrors(OAuthErrorBody, {
    [ErrorCode.INVALID_ARGUMENT]: 'invalid_redirect_uri, invalid_client_metadata (RFC 7591 section 3.2.2)',
    [ErrorCode.NOT_FOUND]: 'dynamic client registration is off',
    [ErrorCode.RESOURCE_EXHAUSTED]: 'temporarily_unavailable: OAUTH_REGISTRATIONS_PER_HOUR from this address',
  })
  async register(
    @Req() request: Request,
    @CurrentRequestContext() context: RequestContext,
  ): Promise<ClientRegistrationResponse> {
    const client = await this.clients.register(request.body, context);
    return {
      client_id: client.id,
      client_id_issued_at: Math.floor(client.createdAt.getTime() / 1000),
      client_name: client.name,
      redirect_uris: client.redirectUris,
      grant_types: [...CLIENT_GRANT_TYPES],
      response_types: [...CLIENT_RESPONSE_TYPES],
      token_endpoint_auth_method: 'none',
    };
  }
}
