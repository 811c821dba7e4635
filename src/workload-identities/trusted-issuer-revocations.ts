import { Injectable } from '@nestjs/common';
import type { AuditEntry } from '../audit/audit.service';
import { revocations } from '../credentials/credentials.service';
import type { Transaction } from '../database/unit-of-work';
import type { IssuerCredentials } from '../federation/issuer-credentials';
import type { TrustedIssuer } from '../federation/trusted-issuer.entity';
import { WorkloadIdentitiesRepository } from './workload-identities.repository';

/**
 * The revocation of the identities naming a trusted issuer at its removal (federation's IssuerCredentials port,
 * called inside the removal's transaction: docs/architecture.md#ports).
 */
@Injectable()
export class TrustedIssuerRevocations implements IssuerCredentials {
  constructor(private readonly identities: WorkloadIdentitiesRepository) {}

  /**
   * After the entry's DELETE: every ACTIVE identity naming it revoked, whoever owns it; a creation that held the entry
   * committed first, one that did not yet finds it gone (WorkloadIdentitiesService.create). The audit entries to record
   * with the removal's (each a credential-change on the revocation feed).
   */
  async revokeAllTrusting(
    entry: Pick<TrustedIssuer, 'id' | 'organizationId'>,
    at: Date,
    tx: Transaction,
  ): Promise<AuditEntry[]> {
    const revoked = await this.identities.revokeAllTrusting(entry, at, tx);
    return revocations(this.identities, revoked, entry.organizationId, 'trusted_issuer_removed');
  }
}
