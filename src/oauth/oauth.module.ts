import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { AuthModule } from '../auth/auth.module';
import { RateLimitStorageModule } from '../common/rate-limit-storage.module';
import { EntitiesModule } from '../database/entities.module';
import { GrantsModule } from '../grants/grants.module';
import { IdentityModule } from '../identity/identity.module';
import { MetricsModule } from '../metrics/metrics.module';
import { ResourceServersModule } from '../resource-servers/resource-servers.module';
import { AuthorizationService } from './authorization.service';
import { AuthorizeController } from './authorize.controller';
import { CLIENT_DOCUMENT_CA, ClientDocuments } from './clients/client-documents';
import { IdleClientSweep } from './clients/idle-client-sweep';
import { OAuthClients } from './clients/oauth-clients';
import { OrganizationClientsController } from './clients/organization-clients.controller';
import { RegisteredClient } from './clients/registered-client.entity';
import { RegisteredClientsRepository } from './clients/registered-clients.repository';
import { RegisteredClients } from './clients/registered-clients.service';
import { RegistrationLimitGuard } from './clients/registration-limit.guard';
import { RegistrationController } from './clients/registration.controller';
import { CodeGrantService } from './code-grant.service';
import { ConsentController } from './consent.controller';
import { ForwardAuthController } from './forward-auth.controller';
import { IntrospectionController } from './introspection.controller';
import { MetadataController } from './metadata.controller';
import { OAuthTokenController } from './oauth-token.controller';
import { OAUTH_GRANTS, oauthGrantsProvider } from './grants/oauth-grants';

/**
 * What resource servers, gateways and their clients speak (docs/resource-servers.md, docs/mcp.md): RFC 8414 metadata,
 * the client-credentials grant, the authorization code grant with its consent and refresh, its clients (metadata
 * documents, dynamic registration, an organization's own), RFC 7662 introspection and forward auth, over auth's
 * exchange and principals and grants' consents.
 */
@Module({
  imports: [
    EntitiesModule.forFeature([RegisteredClient]),
    AuthModule,
    ResourceServersModule,
    GrantsModule,
    IdentityModule,
    AuditModule,
    RateLimitStorageModule,
    MetricsModule,
  ],
  controllers: [
    MetadataController,
    OAuthTokenController,
    IntrospectionController,
    ForwardAuthController,
    AuthorizeController,
    ConsentController,
    RegistrationController,
    OrganizationClientsController,
  ],
  providers: [
    ...OAUTH_GRANTS,
    oauthGrantsProvider,
    AuthorizationService,
    ClientDocuments,
    OAuthClients,
    RegisteredClientsRepository,
    RegisteredClients,
    RegistrationLimitGuard,
    IdleClientSweep,
    CodeGrantService,
    { provide: CLIENT_DOCUMENT_CA, useValue: null },
  ],
  exports: [RegisteredClients],
})
export class OAuthModule {}
