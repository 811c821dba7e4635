import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { EntitiesModule } from '../database/entities.module';
import { IdentityModule } from '../identity/identity.module';
import { OAuthCode, OAuthGrant, OAuthRefreshToken } from './grant.entity';
import { GrantsController } from './grants.controller';
import { GrantsRepository } from './grants.repository';
import { GrantsService } from './grants.service';

/** Grants of the authorization code flow (docs/mcp.md#grants): consents, codes, refresh tokens, their revocation. */
@Module({
  imports: [EntitiesModule.forFeature([OAuthGrant, OAuthCode, OAuthRefreshToken]), IdentityModule, AuditModule],
  controllers: [GrantsController],
  providers: [GrantsRepository, GrantsService],
  exports: [GrantsService],
})
export class GrantsModule {}
