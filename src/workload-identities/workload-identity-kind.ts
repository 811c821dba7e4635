import { AppError } from '../common/errors';
import type { CredentialKind } from '../credentials/credential-kind';
import { WorkloadConditions, WorkloadIdentity } from './workload-identity.entity';

/** The stored conditions (a JSON object as text) as an object. */
export function conditionsOf(identity: Pick<WorkloadIdentity, 'conditions'>): WorkloadConditions {
  return JSON.parse(identity.conditions) as WorkloadConditions;
}

/** The workload identity as a kind of credential (docs/adr/0052-one-credential-core.md); rows read through its entity. */
export const WORKLOAD_IDENTITY_KIND: CredentialKind<WorkloadIdentity> = {
  name: 'workload_identity',
  revokedAction: 'workload_identity.revoked',
  entity: WorkloadIdentity,
  organizationIndexes: { active: 'workload_identities_org_newest', all: 'workload_identities_org_newest' },
  // "wkid"
  ownerLockClass: 0x776b6964,
  keepsIp: true,
  keepsUserAgent: false,
  notFound: () => new AppError('workload_identity_not_found'),
};
