import type { AuditEntry } from '../../audit/audit.service';
import type { Transaction } from '../../database/unit-of-work';
import type { OwnerIds } from '../key-rows';

/**
 * The credentials a member holds in an organization besides their keys (workload identities), revoked in the
 * transaction of the member's removal (MembersService.remove). A port: workload-identities provides it
 * (docs/architecture.md#ports).
 */
export interface MemberCredentials {
  /** Revokes every ACTIVE credential of the member inside `tx`; the audit entries of what it revoked, to record. */
  revokeAllOf(owner: OwnerIds, at: Date, tx: Transaction): Promise<AuditEntry[]>;
}

export const MEMBER_CREDENTIALS = Symbol('MEMBER_CREDENTIALS');
