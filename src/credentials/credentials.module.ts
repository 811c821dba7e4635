import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { IdentityModule } from '../identity/identity.module';
import { CredentialUseRecorder } from './credential-use.recorder';
import { CredentialsService } from './credentials.service';

/**
 * The credential core (docs/adr/0048-one-credential-core.md): what every kind of credential shares. The kinds'
 * modules (api-keys, workload-identities) import it and register their store with CredentialsService.
 */
@Module({
  imports: [AuditModule, IdentityModule],
  providers: [CredentialsService, CredentialUseRecorder],
  exports: [CredentialsService, CredentialUseRecorder],
})
export class CredentialsModule {}
