import { Controller, Get, Header } from '@nestjs/common';
import { ApiOkResponse, ApiOperation, ApiTags } from '@nestjs/swagger';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Public } from '../identity/access.decorators';
import { PERMISSIONS } from '../identity/roles';
import { JWKS_PATH } from '../auth/jwks.controller';
import { OAuthGrants } from './grants/oauth-grants';

/** RFC 8414 authorization-server metadata (docs/resource-servers.md#discovery). */
export interface AuthorizationServerMetadata {
  issuer: string;
  jwks_uri: string;
  token_endpoint: string;
  token_endpoint_auth_methods_supported: string[];
  grant_types_supported: string[];
  introspection_endpoint: string;
  introspection_endpoint_auth_methods_supported: string[];
  scopes_supported: string[];
  response_types_supported: string[];
  authorization_endpoint: string;
  code_challenge_methods_supported: string[];
  authorization_response_iss_parameter_supported: boolean;
  client_id_metadata_document_supported: boolean;
  registration_endpoint?: string;
}

const CLIENT_AUTH_METHODS = ['client_secret_basic', 'client_secret_post'];

@ApiTags('OAuth')
@Controller('.well-known')
export class MetadataController {
  private readonly metadata: AuthorizationServerMetadata;

  constructor(@InjectConfig() config: AppConfiguration, grants: OAuthGrants) {
    const base = config.console.publicBaseUrl;
    this.metadata = {
      issuer: config.jwt.issuer,
      jwks_uri: `${base}${JWKS_PATH}`,
      token_endpoint: `${base}/oauth/token`,
      // `none`: the public clients of the authorization code grant (docs/mcp.md#clients).
      token_endpoint_auth_methods_supported: [...CLIENT_AUTH_METHODS, 'none'],
      grant_types_supported: grants.types,
      introspection_endpoint: `${base}/oauth/introspect`,
      introspection_endpoint_auth_methods_supported: CLIENT_AUTH_METHODS,
      scopes_supported: [...PERMISSIONS],
      response_types_supported: ['code'],
      authorization_endpoint: `${base}/oauth/authorize`,
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
      client_id_metadata_document_supported: true,
      // Named only while dynamic registration is on: clients fall back to it when they have no metadata document.
      ...(config.oauthClients.dynamicRegistration ? { registration_endpoint: `${base}/oauth/register` } : {}),
    };
  }

  @Get('oauth-authorization-server')
  @Public()
  @ApiOperation({ summary: 'OAuth 2.0 authorization-server metadata (RFC 8414)' })
  @ApiOkResponse({ description: 'The metadata document', schema: { type: 'object' } })
  @Header('Cache-Control', 'public, max-age=300')
  document(): AuthorizationServerMetadata {
    return this.metadata;
  }
}
