import { Inject, Injectable } from '@nestjs/common';
import { AuditEntry, AuditService } from '../../audit/audit.service';
import type { RequestContext } from '../../audit/request-context';
import { Messages, notFound } from '../../common/errors';
import { LIST_WINDOW, Page } from '../../common/pagination';
import { Transaction, UnitOfWork } from '../../database/unit-of-work';
import { IdentityService } from '../../identity/identity.service';
import type { ApiKey } from '../api-key.entity';
import { ApiKeysRepository } from '../api-keys.repository';
import { MEMBER_CREDENTIALS, MemberCredentials } from './member-credentials';
import { OrganizationKeysRepository } from './organization-keys.repository';
import { KeyOwner, ListKeysQuery, ownerQueue } from '../api-keys.service';
import type { OwnerIds } from '../key-rows';
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
    @Inject(MEMBER_CREDENTIALS) private readonly otherCredentials: MemberCredentials,
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

  /**
   * Revokes, inside `tx` (a member's removal: MembersService.remove), every ACTIVE key of the member in the
   * organization and their other credentials (workload identities, through the port). `tx` must run in
   * {@link memberQueue}: the owner's lock is taken here, so a key created meanwhile is revoked or refused
   * (docs/api.md#removing-a-member). Returns how many keys it revoked, and the audit entries of every revocation, for the
   * caller to record with its own.
   */
  async revokeMemberCredentials(
    owner: OwnerIds,
    at: Date,
    tx: Transaction,
  ): Promise<{ revokedKeys: number; entries: AuditEntry[] }> {
    await this.keys.lockOwner(owner, tx);
    const revoked = await this.organizationKeys.revokeAllOf(owner, at, tx);
    const others = await this.otherCredentials.revokeAllOf(owner, at, tx);
    return {
      revokedKeys: revoked.length,
      entries: [
        ...revoked.map((id) => ({
          action: 'api_key.revoked' as const,
          reason: 'member_removed',
          organizationId: owner.organizationId,
          targetType: 'api_key' as const,
          targetId: id,
        })),
        ...others,
      ],
    };
  }

  /** The queue a member's removal runs in: the one of their key creations (UnitOfWork's queueKey). */
  memberQueue(owner: OwnerIds): string {
    return ownerQueue(owner);
  }
}
