import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { GrantsModule } from '../grants/grants.module';
import { IdentityModule } from '../identity/identity.module';
import { ResourceServersModule } from '../resource-servers/resource-servers.module';
import { AuthorizationService } from './authorization.service';
import { AuthorizeController } from './authorize.controller';
import { CLIENT_DOCUMENT_CA, ClientDocuments } from './clients/client-documents';
import { OAuthClients } from './clients/oauth-clients';
import { CodeGrantService } from './code-grant.service';
import { ConsentController } from './consent.controller';
import { ForwardAuthController } from './forward-auth.controller';
import { IntrospectionController } from './introspection.controller';
import { MetadataController } from './metadata.controller';
import { OAuthTokenController } from './oauth-token.controller';
import { OAUTH_GRANTS, oauthGrantsProvider } from './grants/oauth-grants';

/**
 * What resource servers, gateways and their clients speak (docs/resource-servers.md, docs/mcp.md): RFC 8414 metadata,
 * the client-credentials grant, the authorization code grant with its consent and refresh, RFC 7662 introspection and
 * forward auth, over auth's exchange and principals and grants' consents.
 */
@Module({
  imports: [AuthModule, ResourceServersModule, GrantsModule, IdentityModule],
  controllers: [
    MetadataController,
    OAuthTokenController,
    IntrospectionController,
    ForwardAuthController,
    AuthorizeController,
    ConsentController,
  ],
  providers: [
    ...OAUTH_GRANTS,
    oauthGrantsProvider,
    AuthorizationService,
    ClientDocuments,
    OAuthClients,
    CodeGrantService,
    { provide: CLIENT_DOCUMENT_CA, useValue: null },
  ],
})
export class OAuthModule {}
