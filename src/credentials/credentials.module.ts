import { Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { IdentityModule } from '../identity/identity.module';
import { CredentialKinds } from './credential-kinds';
import { CredentialUseRecorder } from './credential-use.recorder';
import { CredentialsService } from './credentials.service';

/**
 * The credential core (docs/adr/0052-one-credential-core.md): what every kind of credential shares. The kinds'
 * modules (api-keys, workload-identities) import it; each kind's repository extends CredentialsRepository, which adds
 * it to CredentialKinds.
 */
@Module({
  imports: [AuditModule, IdentityModule],
  providers: [CredentialsService, CredentialUseRecorder, CredentialKinds],
  exports: [CredentialsService, CredentialUseRecorder, CredentialKinds],
})
export class CredentialsModule {}
