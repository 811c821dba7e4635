import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { EntitiesModule } from '../database/entities.module';
import { IdentityModule } from '../identity/identity.module';
import { CredentialKinds } from './credential-kinds';
import { CredentialUseRecorder } from './credential-use.recorder';
import { CredentialUsageController } from './credential-usage.controller';
import { CredentialUsageCounter } from './credential-usage.counter';
import { CredentialUsageHour, CredentialUsageMinute } from './credential-usage.entity';
import { CredentialUsageRepository } from './credential-usage.repository';
import { CredentialUsageRetention } from './credential-usage.retention';
import { CredentialUsageService } from './credential-usage.service';
import { CredentialsService } from './credentials.service';

/**
 * The credential core (docs/adr/0052-one-credential-core.md): what every kind of credential shares. The kinds'
 * modules (api-keys, workload-identities) import it; each kind's repository extends CredentialsRepository, which adds
 * it to CredentialKinds. Usage over time (docs/adr/0058-usage-over-time.md) counts the uses of every kind.
 */
@Module({
  imports: [EntitiesModule.forFeature([CredentialUsageMinute, CredentialUsageHour]), AuditModule, IdentityModule],
  controllers: [CredentialUsageController],
  providers: [
    CredentialsService,
    CredentialUseRecorder,
    CredentialKinds,
    CredentialUsageRepository,
    CredentialUsageCounter,
    CredentialUsageService,
    CredentialUsageRetention,
  ],
  exports: [CredentialsService, CredentialUseRecorder, CredentialKinds, CredentialUsageCounter, CredentialUsageService],
})
export class CredentialsModule {}
