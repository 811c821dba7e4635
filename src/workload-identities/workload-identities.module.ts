import { Global, Module } from '@nestjs/common';
import { MEMBER_CREDENTIALS } from '../api-keys/organization/member-credentials';
import { AuditModule } from '../audit/audit.module';
import { FederationModule } from '../federation/federation.module';
import { ISSUER_CREDENTIALS } from '../federation/issuer-credentials';
import { IdentityModule } from '../identity/identity.module';
import { OrganizationWorkloadIdentitiesController } from './organization/organization-workload-identities.controller';
import { OrganizationWorkloadIdentitiesRepository } from './organization/organization-workload-identities.repository';
import { OrganizationWorkloadIdentitiesService } from './organization/organization-workload-identities.service';
import { IdentityUsageRepository } from './usage/identity-usage.repository';
import { IdentityUseRecorder } from './usage/identity-use.recorder';
import { WorkloadIdentitiesController } from './workload-identities.controller';
import { WorkloadIdentitiesRepository } from './workload-identities.repository';
import { WorkloadIdentitiesService } from './workload-identities.service';
import { WorkloadIdentity } from './workload-identity.entity';
import { EntitiesModule } from '../database/entities.module';

/**
 * Workload identities (docs/workload-identities.md): keys without secrets, matched against the tokens of the
 * organization's trusted issuers of kind workloads (federation).
 */
@Module({
  imports: [EntitiesModule.forFeature([WorkloadIdentity]), IdentityModule, AuditModule, FederationModule],
  controllers: [WorkloadIdentitiesController, OrganizationWorkloadIdentitiesController],
  providers: [
    WorkloadIdentitiesRepository,
    OrganizationWorkloadIdentitiesRepository,
    IdentityUsageRepository,
    IdentityUseRecorder,
    WorkloadIdentitiesService,
    OrganizationWorkloadIdentitiesService,
  ],
  // WorkloadIdentitiesService: the token exchange (matching, usable, recordUse). OrganizationWorkloadIdentitiesService:
  // for WorkloadIdentitiesPortsModule only.
  exports: [WorkloadIdentitiesService, OrganizationWorkloadIdentitiesService],
})
export class WorkloadIdentitiesModule {}

/**
 * The ports workload-identities provides to api-keys and federation: a member's removal, and a trusted issuer's,
 * revoke the identities concerned in its transaction. Global, with those two tokens exported, so that api-keys and
 * federation inject them without importing workload-identities (docs/architecture.md#ports).
 */
@Global()
@Module({
  imports: [WorkloadIdentitiesModule],
  providers: [
    { provide: MEMBER_CREDENTIALS, useExisting: OrganizationWorkloadIdentitiesService },
    { provide: ISSUER_CREDENTIALS, useExisting: OrganizationWorkloadIdentitiesService },
  ],
  exports: [MEMBER_CREDENTIALS, ISSUER_CREDENTIALS],
})
export class WorkloadIdentitiesPortsModule {}
