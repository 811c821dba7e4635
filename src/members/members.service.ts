import { Injectable } from '@nestjs/common';
import { CredentialsService } from '../credentials/credentials.service';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { UnitOfWork } from '../database/unit-of-work';
import type { RoleChange } from '../identity/identity.repository';
import { IdentityService, sleepUntil } from '../identity/identity.service';
import type { Role } from '../identity/roles';

/** Who made a change: no actor for the admin CLI (the operator); the member for an API request. */
export interface MemberChangeBy {
  actorUserId?: string | null;
  actorApiKeyId?: string | null;
  request?: RequestContext;
}

/** What removing a member did. */
export interface MemberRemoval {
  /** False: the user was not a member (nothing changed). */
  removed: boolean;
  /** How many of the member's keys were revoked. */
  revokedKeys: number;
}

/** What a just-in-time membership did: added, a member already, or refused (an admin removed them). */
export type JustInTimeOutcome = 'added' | 'member' | 'removed';

/**
 * The member lifecycle (docs/adr/0044-one-member-lifecycle.md): every way a person becomes a member, changes role or
 * stops being one goes through here, whoever asks (the admin CLI, single sign-on's just-in-time membership, the API),
 * each change audited in its transaction. A removal revokes the member's credentials (keys, workload identities, grants; their
 * session tokens die with the membership) and is remembered: single sign-on never adds a removed person again, only an
 * admin does.
 */
@Injectable()
export class MembersService {
  constructor(
    private readonly identity: IdentityService,
    private readonly credentials: CredentialsService,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
  ) {}

  /**
   * An admin sets the person's role: adds them (again, after a removal: the removal is forgotten) or changes it,
   * audited `member.added` (reason `admin`) or `member.role_changed` (reason: the new role) in the same transaction.
   */
  async setRole(organizationId: string, userId: string, role: Role, by: MemberChangeBy = {}): Promise<RoleChange> {
    return this.unitOfWork.run(async (tx) => {
      const change = await this.identity.setRole(organizationId, userId, role, tx);
      if (change === 'unchanged') return change;
      if (change === 'added') await this.identity.forgetRemoval(organizationId, userId, tx);
      await this.audit.record(
        {
          action: change === 'added' ? 'member.added' : 'member.role_changed',
          reason: change === 'added' ? 'admin' : role,
          organizationId,
          targetType: 'user',
          targetId: userId,
          actorUserId: by.actorUserId ?? null,
          actorApiKeyId: by.actorApiKeyId ?? null,
          request: by.request,
        },
        tx,
      );
      return change;
    });
  }

  /** An admin makes sure the person is a member: an existing membership keeps its role, else as setRole with `role`. */
  async ensureMember(organizationId: string, userId: string, role: Role, by: MemberChangeBy = {}): Promise<Role> {
    const access = await this.identity.access(organizationId, userId);
    if (access !== null) return access.role;
    await this.setRole(organizationId, userId, role, by);
    return role;
  }

  /**
   * Single sign-on's just-in-time membership with the issuer's role: added (audited `member.added`, reason `sso`),
   * unless the person is a member already, or an admin removed them (nothing is written: `removed`).
   */
  async joinJustInTime(
    organizationId: string,
    userId: string,
    role: Role,
    request?: RequestContext,
  ): Promise<JustInTimeOutcome> {
    return this.unitOfWork.run(async (tx) => {
      const outcome = await this.identity.joinJustInTime(organizationId, userId, role, tx);
      if (outcome === 'added') {
        await this.audit.record(
          { action: 'member.added', organizationId, targetType: 'user', targetId: userId, reason: 'sso', request },
          tx,
        );
      }
      return outcome;
    });
  }

  /**
   * Removes the member: the membership (their session tokens stop at once), every credential of theirs in the
   * organization revoked (each kind of CredentialKinds: keys, workload identities, grants), and the removal remembered,
   * audited in one transaction under the owner's lock, so a creation meanwhile is revoked or refused
   * (docs/api.md#removing-a-member).
   */
  async remove(organizationId: string, userId: string, by: MemberChangeBy = {}): Promise<MemberRemoval> {
    const owner = { organizationId, userId };
    const at = new Date();
    const removal = await this.unitOfWork.run(
      async (tx) => {
        if (!(await this.identity.removeMember(organizationId, userId, tx))) return { removed: false, revokedKeys: 0 };
        const { revoked, entries } = await this.credentials.revokeMemberCredentials(owner, at, tx);
        const revokedKeys = revoked.api_key ?? 0;
        await this.audit.recordAll(
          [
            ...entries,
            {
              action: 'member.removed',
              organizationId,
              targetType: 'user',
              targetId: userId,
              actorUserId: by.actorUserId ?? null,
              actorApiKeyId: by.actorApiKeyId ?? null,
              request: by.request,
            },
          ],
          tx,
        );
        return { removed: true, revokedKeys };
      },
      { queueKey: this.credentials.memberQueue(owner) },
    );
    // A membership begun again starts in a later second than any session token of this one (iat).
    if (removal.removed) await sleepUntil((Math.floor(Date.now() / 1000) + 1) * 1000);
    return removal;
  }
}
