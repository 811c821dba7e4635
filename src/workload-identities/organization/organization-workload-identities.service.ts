import { Injectable } from '@nestjs/common';
import type { MemberCredentials } from '../../api-keys/organization/member-credentials';
import type { AuditEntry } from '../../audit/audit.service';
import { AuditService } from '../../audit/audit.service';
import type { RequestContext } from '../../audit/request-context';
import { AppError } from '../../common/errors';
import type { Page } from '../../common/pagination';
import { Transaction, UnitOfWork } from '../../database/unit-of-work';
import type { IssuerCredentials } from '../../federation/issuer-credentials';
import type { TrustedIssuer } from '../../federation/trusted-issuer.entity';
import { IdentityService } from '../../identity/identity.service';
import type { WorkloadIdentity } from '../workload-identity.entity';
import { WorkloadIdentitiesRepository } from '../workload-identities.repository';
import { actor, IdentityOwner, ListIdentitiesQuery, target } from '../workload-identities.service';
import { OwnerIds, pageOf, windowOf } from '../workload-identity-rows';
import { IdentityUseRecorder } from '../usage/identity-use.recorder';
import { OrganizationWorkloadIdentitiesRepository } from './organization-workload-identities.repository';

export interface OrganizationIdentitiesQuery extends ListIdentitiesQuery {
  /** Only this user's identities. */
  userId?: string;
  /** Only the identities of the user with this e-mail address (with userId: the same user, else none). */
  email?: string;
}

/** Identities and their owners' e-mail addresses, to show beside the owner ids. */
export interface WithOwnerEmails {
  emails: ReadonlyMap<string, string>;
}

/**
 * Every member's workload identities, for the organization's admins (as organization key management,
 * docs/workload-identities.md#organization-admins), and their revocation at a member's removal (api-keys'
 * MemberCredentials port) and at their trusted issuer's removal (federation's IssuerCredentials port), each called
 * inside the removal's transaction (docs/architecture.md#ports).
 */
@Injectable()
export class OrganizationWorkloadIdentitiesService implements MemberCredentials, IssuerCredentials {
  constructor(
    private readonly identities: WorkloadIdentitiesRepository,
    private readonly organizationIdentities: OrganizationWorkloadIdentitiesRepository,
    private readonly uses: IdentityUseRecorder,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    private readonly identity: IdentityService,
  ) {}

  /** The organization's identities (or one user's), newest first, within the list window, with the owners' e-mails. */
  async list(
    caller: IdentityOwner,
    query: OrganizationIdentitiesQuery,
  ): Promise<WithOwnerEmails & { page: Page<WorkloadIdentity> }> {
    let userId = query.userId;
    if (query.email !== undefined) {
      const byEmail = await this.identity.userIdByEmail(query.email);
      // No such user, or another one than user_id names: nothing matches.
      if (byEmail === null || (userId !== undefined && userId !== byEmail)) {
        return { page: pageOf([], query, 0), emails: new Map() };
      }
      userId = byEmail;
    }
    const window = windowOf(query);
    const { identities, totalCount } =
      userId === undefined
        ? await this.organizationIdentities.findPageByOrganization(caller.organizationId, window)
        : await this.identities.findPageByOwner({ userId, organizationId: caller.organizationId }, window);
    return {
      page: pageOf(
        identities.map((identity) => this.uses.withPendingUse(identity)),
        query,
        totalCount,
      ),
      emails: await this.identity.emailsOf(identities.map((identity) => identity.userId)),
    };
  }

  /** Revokes any identity of the organization (idempotent), audited with reason `admin` in the same transaction. */
  async revoke(
    caller: IdentityOwner,
    id: string,
    request?: RequestContext,
  ): Promise<WithOwnerEmails & { identity: WorkloadIdentity }> {
    const at = new Date();
    await this.unitOfWork.run(async (tx) => {
      if (!(await this.organizationIdentities.revokeInOrganization(caller.organizationId, id, at, tx))) return;
      await this.audit.record(
        { action: 'workload_identity.revoked', reason: 'admin', ...actor(caller), ...target(id), request },
        tx,
      );
    });
    const identity = await this.identities.findById(id);
    if (identity === undefined || identity.organizationId !== caller.organizationId) {
      throw new AppError('workload_identity_not_found');
    }
    return { identity: this.uses.withPendingUse(identity), emails: await this.identity.emailsOf([identity.userId]) };
  }

  /**
   * A member's removal (MembersService.remove, inside its transaction): every ACTIVE identity of theirs
   * there revoked, under the owner's lock so that a creation meanwhile is revoked or refused; the audit entries to
   * record with the removal's (each becomes a credential-change on the revocation feed).
   */
  async revokeAllOf(owner: OwnerIds, at: Date, tx: Transaction): Promise<AuditEntry[]> {
    await this.identities.lockOwner(owner, tx);
    const revoked = await this.organizationIdentities.revokeAllOf(owner, at, tx);
    return revocations(revoked, owner.organizationId, 'member_removed');
  }

  /**
   * A trusted issuer's removal (TrustedIssuersService.remove, inside its transaction, after the entry's DELETE): every
   * ACTIVE identity naming it revoked, whoever owns it; a creation that held the entry committed first, one that did not
   * yet finds it gone (WorkloadIdentitiesService.create). The audit entries to record with the removal's.
   */
  async revokeAllTrusting(
    entry: Pick<TrustedIssuer, 'id' | 'organizationId'>,
    at: Date,
    tx: Transaction,
  ): Promise<AuditEntry[]> {
    const revoked = await this.organizationIdentities.revokeAllTrusting(entry, at, tx);
    return revocations(revoked, entry.organizationId, 'trusted_issuer_removed');
  }
}

/** The audit entries of revocations without an actor (each becomes a credential-change on the revocation feed). */
function revocations(ids: string[], organizationId: string, reason: string): AuditEntry[] {
  return ids.map((id) => ({ action: 'workload_identity.revoked' as const, reason, organizationId, ...target(id) }));
}
