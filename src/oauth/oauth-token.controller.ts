import { Controller, Header, HttpCode, Post } from '@nestjs/common';
import { ApiBody, ApiConsumes, ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { ApiOAuthErrors } from '../common/openapi';
import { ErrorCode } from '../common/errors';
import { Authenticated, Caller } from '../identity/access.decorators';
import { OAuthGrantCaller, OAuthGrantGuard } from './oauth-grant.guard';
import { OAuthErrorBody, OAuthTokenResponse } from './openapi';

/**
 * POST /oauth/token: the grant the form names (OAuthGrants: client credentials, RFC 6749 section 4.4, the API key as
 * the client; RFC 8693 token exchange; a public client's authorization code or refresh token) authenticated the caller
 * in the guard and issues its token here.
 */
@ApiTags('OAuth')
@Controller('oauth/token')
export class OAuthTokenController {
  @Post()
  @Authenticated(OAuthGrantGuard)
  @HttpCode(200)
  @Header('Cache-Control', 'no-store')
  @Header('Pragma', 'no-cache')
  @ApiOperation({
    summary:
      'Client-credentials grant: an access token for an API key (RFC 6749 section 4.4); token exchange (RFC 8693): ' +
      "a workload's JWT or a person's ID token from a trusted issuer; authorization code with PKCE and refresh " +
      'token (public clients of resource servers, docs/mcp.md)',
  })
  @ApiConsumes('application/x-www-form-urlencoded')
  @ApiBody({
    schema: {
      type: 'object',
      required: ['grant_type'],
      properties: {
        grant_type: {
          type: 'string',
          enum: [
            'client_credentials',
            'urn:ietf:params:oauth:grant-type:token-exchange',
            'authorization_code',
            'refresh_token',
          ],
        },
        code: { type: 'string', description: 'authorization_code: the code the redirect carried' },
        redirect_uri: { type: 'string', description: 'authorization_code: the redirect URI of the request' },
        code_verifier: { type: 'string', description: 'authorization_code: the PKCE verifier (RFC 7636)' },
        refresh_token: { type: 'string', description: 'refresh_token: the last refresh token (each works once)' },
        subject_token: { type: 'string', description: "Token exchange: the workload's JWT or the person's ID token" },
        subject_token_type: {
          type: 'string',
          enum: ['urn:ietf:params:oauth:token-type:jwt', 'urn:ietf:params:oauth:token-type:id_token'],
        },
        requested_token_type: { type: 'string', description: 'Token exchange: optional, what the subject gets' },
        client_id: {
          type: 'string',
          description:
            "The API key id (client_secret_post; or HTTP Basic); token exchange of a workload's JWT: the workload " +
            "identity's id, the only identity then considered",
        },
        client_secret: { type: 'string', description: 'The whole API key (client_secret_post; or HTTP Basic)' },
        scope: {
          type: 'string',
          description:
            "Permission names separated by spaces, among the key's scopes; with a resource that declares scopes, " +
            'names among those',
        },
        resource: { type: 'string', description: "A registered resource server's audience (RFC 8707)" },
      },
    },
  })
  @ApiOkResponse({ type: OAuthTokenResponse })
  @ApiOAuthErrors(OAuthErrorBody, {
    [ErrorCode.INVALID_ARGUMENT]:
      'invalid_request, unsupported_grant_type, invalid_grant (a subject token, code or refresh token not accepted), ' +
      'invalid_scope, invalid_target',
    [ErrorCode.UNAUTHENTICATED]: 'invalid_client',
    [ErrorCode.PERMISSION_DENIED]: "unauthorized_client (the key's allowlist does not have the client's address)",
    [ErrorCode.RESOURCE_EXHAUSTED]: 'temporarily_unavailable (failure limit)',
    [ErrorCode.UNAVAILABLE]: "temporarily_unavailable (the subject token's identity provider cannot be reached)",
  })
  token(@Caller() { grant, caller, form }: OAuthGrantCaller): Promise<OAuthTokenResponse> {
    return grant.issue(caller, form);
  }
}
