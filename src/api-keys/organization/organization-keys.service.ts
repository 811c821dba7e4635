import type { Role } from '../../identity/roles';
import { Inject, Injectable, Optional } from '@nestjs/common';
import { AuditService } from '../../audit/audit.service';
import type { RequestContext } from '../../audit/request-context';
import { Messages, notFound } from '../../common/errors';
import { LIST_WINDOW, Page } from '../../common/pagination';
import { UnitOfWork } from '../../database/unit-of-work';
import { IdentityService, sleepUntil } from '../../identity/identity.service';
import type { ApiKey } from '../api-key.entity';
import { ApiKeysRepository } from '../api-keys.repository';
import { MEMBER_CREDENTIALS, MemberCredentials } from './member-credentials';
import { OrganizationKeysRepository } from './organization-keys.repository';
import { KeyOwner, ListKeysQuery, ownerQueue } from '../api-keys.service';
import { LastUsedRecorder } from '../usage/last-used.recorder';

export interface OrganizationKeysQuery extends ListKeysQuery {
  /** Only this user's keys. */
  userId?: string;
  /** Only the keys of the user with this e-mail address (with userId: the same user, else none). */
  email?: string;
}

/** Keys and their owners' e-mail addresses, to show beside the owner ids. */
export interface WithOwnerEmails {
  emails: ReadonlyMap<string, string>;
}

/** What removing a member did. */
export interface MemberRemoval {
  /** False: the user was not a member (nothing changed). */
  removed: boolean;
  /** How many of the member's keys were revoked. */
  revokedKeys: number;
}

/** docs/api.md#organization-key-management; every query is scoped by the caller's organization. */
@Injectable()
export class OrganizationKeysService {
  constructor(
    private readonly keys: ApiKeysRepository,
    private readonly organizationKeys: OrganizationKeysRepository,
    private readonly lastUsed: LastUsedRecorder,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    private readonly identity: IdentityService,
    // The member's other credentials, revoked with the keys: a port workload-identities provides.
    @Optional() @Inject(MEMBER_CREDENTIALS) private readonly otherCredentials?: MemberCredentials,
  ) {}

  /** The organization's keys (or one user's), newest first, within the list window, with the owners' e-mails. */
  async list(caller: KeyOwner, query: OrganizationKeysQuery): Promise<WithOwnerEmails & { page: Page<ApiKey> }> {
    const offset = (query.page - 1) * query.limit;
    const window = {
      limit: Math.max(0, Math.min(query.limit, LIST_WINDOW - offset)),
      offset,
      includeRevoked: query.includeRevoked,
    };
    let userId = query.userId;
    if (query.email !== undefined) {
      const byEmail = await this.identity.userIdByEmail(query.email);
      // No such user, or another one than user_id names: no key matches.
      if (byEmail === null || (userId !== undefined && userId !== byEmail)) {
        return { page: { items: [], page: query.page, limit: query.limit, totalCount: 0 }, emails: new Map() };
      }
      userId = byEmail;
    }
    const { keys, totalCount } =
      userId === undefined
        ? await this.organizationKeys.findPageByOrganization(caller.organizationId, window)
        : await this.keys.findPageByOwner({ userId, organizationId: caller.organizationId }, window);
    return {
      page: {
        items: keys.map((key) => this.lastUsed.withPendingUse(key)),
        page: query.page,
        limit: query.limit,
        totalCount,
      },
      emails: await this.identity.emailsOf(keys.map((key) => key.userId)),
    };
  }

  /** Revokes any key of the organization (idempotent), audited with reason `admin` in the same transaction. */
  async revoke(caller: KeyOwner, id: string, request?: RequestContext): Promise<WithOwnerEmails & { key: ApiKey }> {
    const at = new Date();
    await this.unitOfWork.run(async (tx) => {
      if (!(await this.organizationKeys.revokeInOrganization(caller.organizationId, id, at, tx))) return;
      await this.audit.record(
        {
          action: 'api_key.revoked',
          reason: 'admin',
          organizationId: caller.organizationId,
          actorUserId: caller.userId,
          actorApiKeyId: caller.apiKeyId ?? null,
          targetType: 'api_key',
          targetId: id,
          request,
        },
        tx,
      );
    });
    const key = await this.keys.findById(id);
    if (key === undefined || key.organizationId !== caller.organizationId) throw notFound(Messages.apiKeyNotFound);
    return { key: this.lastUsed.withPendingUse(key), emails: await this.identity.emailsOf([key.userId]) };
  }

  /** Sets a member's role (adds the membership if missing); a change of role is audited in the same transaction. */
  async setRole(organizationId: string, userId: string, role: Role): Promise<void> {
    await this.unitOfWork.run(async (tx) => {
      if ((await this.identity.setRole(organizationId, userId, role, tx)) !== 'changed') return;
      await this.audit.record(
        { action: 'member.role_changed', organizationId, targetType: 'user', targetId: userId, reason: role },
        tx,
      );
    });
  }

  /**
   * The membership and every key of the member there, revoked and audited in one transaction under the owner's lock,
   * so a creation meanwhile is revoked or refused (docs/api.md#removing-a-member).
   */
  async removeMember(organizationId: string, userId: string): Promise<MemberRemoval> {
    const owner = { organizationId, userId };
    const at = new Date();
    const removal = await this.unitOfWork.run(
      async (tx) => {
        if (!(await this.identity.removeMember(organizationId, userId, tx))) return { removed: false, revokedKeys: 0 };
        await this.keys.lockOwner(owner, tx);
        const revoked = await this.organizationKeys.revokeAllOf(owner, at, tx);
        const others = (await this.otherCredentials?.revokeAllOf(owner, at, tx)) ?? [];
        await this.audit.recordAll(
          [
            ...revoked.map((id) => ({
              action: 'api_key.revoked' as const,
              reason: 'member_removed',
              organizationId,
              targetType: 'api_key' as const,
              targetId: id,
            })),
            ...others,
            { action: 'member.removed' as const, organizationId, targetType: 'user' as const, targetId: userId },
          ],
          tx,
        );
        return { removed: true, revokedKeys: revoked.length };
      },
      { queueKey: ownerQueue(owner) },
    );
    // A membership begun again starts in a later second than any session token of this one (iat).
    if (removal.removed) await sleepUntil((Math.floor(Date.now() / 1000) + 1) * 1000);
    return removal;
  }
}
