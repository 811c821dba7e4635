import { AppError } from '../common/errors';
import type { CredentialKind, CredentialRow } from '../credentials/credential-kind';
import { credentialFields } from '../credentials/credentials.repository';
import { WorkloadConditions, WorkloadIdentity, WorkloadIdentityReach } from './workload-identity.entity';

/** A row of workload_identities as the repositories' statements return it. */
export interface WorkloadIdentityRow extends CredentialRow {
  trusted_issuer_id: string;
  issuer: string;
  subject: string;
  conditions: string;
  reachable_by: WorkloadIdentityReach;
}

/** The columns of WorkloadIdentityRow, which toWorkloadIdentity maps. */
export const COLUMNS = `id, organization_id, user_id, trusted_issuer_id, issuer, label, subject, conditions, status,
  reachable_by, scopes, expires_at, created_at, updated_at, last_used_at, last_used_ip, revoked_at`;

/** The one mapper from a workload_identities row to the entity. */
export function toWorkloadIdentity(row: WorkloadIdentityRow): WorkloadIdentity {
  return Object.assign(new WorkloadIdentity(), credentialFields(row), {
    trustedIssuerId: row.trusted_issuer_id,
    issuer: row.issuer,
    subject: row.subject,
    conditions: row.conditions,
    reachableBy: row.reachable_by,
  });
}

/** The stored conditions (a JSON object as text) as an object. */
export function conditionsOf(identity: Pick<WorkloadIdentity, 'conditions'>): WorkloadConditions {
  return JSON.parse(identity.conditions) as WorkloadConditions;
}

/** The workload identity as a kind of credential (docs/adr/0052-one-credential-core.md). */
export const WORKLOAD_IDENTITY_KIND: CredentialKind<WorkloadIdentity, WorkloadIdentityRow> = {
  name: 'workload_identity',
  revokedAction: 'workload_identity.revoked',
  table: 'workload_identities',
  columns: COLUMNS,
  toEntity: toWorkloadIdentity,
  organizationIndexes: { active: 'workload_identities_org_newest', all: 'workload_identities_org_newest' },
  // "wkid"
  ownerLockClass: 0x776b6964,
  keepsUserAgent: false,
  notFound: () => new AppError('workload_identity_not_found'),
};
