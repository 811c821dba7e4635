import { Global, Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { CredentialsModule } from '../credentials/credentials.module';
import { FederationModule } from '../federation/federation.module';
import { ISSUER_CREDENTIALS } from '../federation/issuer-credentials';
import { IdentityModule } from '../identity/identity.module';
import { TrustedIssuerRevocations } from './trusted-issuer-revocations';
import { WorkloadIdentitiesController } from './workload-identities.controller';
import { WorkloadIdentitiesRepository } from './workload-identities.repository';
import { WorkloadIdentitiesService } from './workload-identities.service';
import { WORKLOAD_IDENTITY_ROUTES } from './workload-identity-routes';
import { WorkloadIdentity } from './workload-identity.entity';
import { EntitiesModule } from '../database/entities.module';

/**
 * Workload identities (docs/workload-identities.md): keys without secrets, matched against the tokens of the
 * organization's trusted issuers of kind workloads (federation); a kind of credential (docs/adr/0052-one-credential-core.md).
 */
@Module({
  imports: [
    EntitiesModule.forFeature([WorkloadIdentity]),
    IdentityModule,
    AuditModule,
    FederationModule,
    CredentialsModule,
  ],
  controllers: [WorkloadIdentitiesController, WORKLOAD_IDENTITY_ROUTES.OrganizationController],
  providers: [WorkloadIdentitiesRepository, WorkloadIdentitiesService, TrustedIssuerRevocations],
  // WorkloadIdentitiesService: the token exchange (matching, usable, recordUse). TrustedIssuerRevocations: for
  // WorkloadIdentitiesPortsModule only.
  exports: [WorkloadIdentitiesService, TrustedIssuerRevocations],
})
export class WorkloadIdentitiesModule {}

/**
 * The port workload-identities provides to federation: a trusted issuer's removal revokes the identities naming it in
 * its transaction. Global, with that token exported, so that federation injects it without importing
 * workload-identities (docs/architecture.md#ports).
 */
@Global()
@Module({
  imports: [WorkloadIdentitiesModule],
  providers: [{ provide: ISSUER_CREDENTIALS, useExisting: TrustedIssuerRevocations }],
  exports: [ISSUER_CREDENTIALS],
})
export class WorkloadIdentitiesPortsModule {}
