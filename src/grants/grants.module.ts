import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { CredentialsModule } from '../credentials/credentials.module';
import { EntitiesModule } from '../database/entities.module';
import { IdentityModule } from '../identity/identity.module';
import { OAuthCode, OAuthGrant, OAuthRefreshChain } from './grant.entity';
import { GrantsController } from './grants.controller';
import { GrantsRepository } from './grants.repository';
import { GrantsService } from './grants.service';

/**
 * Grants of the authorization code flow (docs/mcp.md#grants): consents, codes, refresh tokens, their revocation. A kind
 * of credential: its repository extends CredentialStore (docs/adr/0052-one-credential-core.md).
 */
@Module({
  imports: [
    EntitiesModule.forFeature([OAuthGrant, OAuthCode, OAuthRefreshChain]),
    IdentityModule,
    AuditModule,
    CredentialsModule,
  ],
  controllers: [GrantsController],
  providers: [GrantsRepository, GrantsService],
  exports: [GrantsService],
})
export class GrantsModule {}
