import { Module } from '@nestjs/common';
import { AuthModule } from '../auth/auth.module';
import { ResourceServersModule } from '../resource-servers/resource-servers.module';
import { ForwardAuthController } from './forward-auth.controller';
import { IntrospectionController } from './introspection.controller';
import { MetadataController } from './metadata.controller';
import { OAuthTokenController } from './oauth-token.controller';
import { OAUTH_GRANTS, oauthGrantsProvider } from './grants/oauth-grants';

/**
 * What resource servers and gateways speak (docs/resource-servers.md): RFC 8414 metadata, the client-credentials
 * grant, RFC 7662 introspection and forward auth, over auth's exchange and principals.
 */
@Module({
  imports: [AuthModule, ResourceServersModule],
  controllers: [MetadataController, OAuthTokenController, IntrospectionController, ForwardAuthController],
  providers: [...OAUTH_GRANTS, oauthGrantsProvider],
})
export class OAuthModule {}
