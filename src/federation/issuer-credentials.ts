import type { AuditEntry } from '../audit/audit.service';
import type { Transaction } from '../database/unit-of-work';
import type { TrustedIssuer } from './trusted-issuer.entity';

/**
 * The credentials that trust a trusted issuer (workload identities), revoked in the transaction of its removal
 * (TrustedIssuersService.remove). A port: workload-identities provides it (docs/architecture.md#ports).
 */
export interface IssuerCredentials {
  /**
   * Revokes every ACTIVE credential that names the entry inside `tx`; the audit entries of what it revoked, one per
   * credential, to record with the removal's.
   */
  revokeAllTrusting(
    entry: Pick<TrustedIssuer, 'id' | 'organizationId'>,
    at: Date,
    tx: Transaction,
  ): Promise<AuditEntry[]>;
}

export const ISSUER_CREDENTIALS = Symbol('ISSUER_CREDENTIALS');
