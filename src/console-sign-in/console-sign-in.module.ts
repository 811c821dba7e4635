import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { AuthModule } from '../auth/auth.module';
import { RateLimitStorageModule } from '../common/rate-limit-storage.module';
import { IdentityModule } from '../identity/identity.module';
import { MembersModule } from '../members/members.module';
import { MetricsModule } from '../metrics/metrics.module';
import { ConsoleInvitationsController, ConsoleSignInController } from './console-sign-in.controller';
import { ConsoleSignInRepository } from './console-sign-in.repository';
import { ConsoleSignInService } from './console-sign-in.service';
import { ConsoleSignInLink } from './console-sign-in-link.entity';
import { EntitiesModule } from '../database/entities.module';

/** One-time sign-in links of the web console and POST /v1/console/sessions (docs/console.md). */
@Module({
  imports: [
    EntitiesModule.forFeature([ConsoleSignInLink]),
    AuditModule,
    AuthModule,
    IdentityModule,
    RateLimitStorageModule,
    MetricsModule,
    MembersModule,
  ],
  controllers: [ConsoleSignInController, ConsoleInvitationsController],
  providers: [ConsoleSignInRepository, ConsoleSignInService],
  exports: [ConsoleSignInService],
})
export class ConsoleSignInModule {}
