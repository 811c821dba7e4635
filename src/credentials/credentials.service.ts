import { Injectable } from '@nestjs/common';
import type { AuditEvent } from '../audit/audit-event.entity';
import { AuditEntry, AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { LIST_WINDOW, Page } from '../common/pagination';
import { Transaction, UnitOfWork } from '../database/unit-of-work';
import { IdentityService } from '../identity/identity.service';
import type { Credential } from './credential.entity';
import { actor, CredentialOwner, OwnerIds, ownedBy, ownerQueue } from './credential-owner';
import type { CredentialsRepository, PageWindow } from './credentials.repository';
import type { KindStore } from './credential-kind';
import { CredentialKinds } from './credential-kinds';
import { CredentialUseRecorder } from './credential-use.recorder';

export interface ListCredentialsQuery {
  page: number;
  limit: number;
  includeRevoked: boolean;
}

export interface OrganizationCredentialsQuery extends ListCredentialsQuery {
  /** Only this user's credentials. */
  userId?: string;
  /** Only the credentials of the user with this e-mail address (with userId: the same user, else none). */
  email?: string;
}

/**
 * Credentials and their owners' e-mail addresses, to show beside the owner ids, and who revoked each revoked one (by
 * credential id; none when its audit entry is past retention).
 */
export interface WithOwnerEmails {
  emails: ReadonlyMap<string, string>;
  revokers: ReadonlyMap<string, Revoker>;
}

/** A revocation as its audit entry tells it: when, why (`user`, `admin`, `exposed`, …) and by whom (null: nobody). */
export interface Revoker {
  at: Date;
  reason: string | null;
  userId: string | null;
  email: string | null;
  /** The key whose token the revoker used, when it was one. */
  apiKeyId: string | null;
}

/** What a member's removal revoked: how many of each kind, and the audit entries to record with the removal's. */
export interface MemberRevocation {
  revoked: Readonly<Record<string, number>>;
  entries: AuditEntry[];
}

/**
 * The life of every kind of credential (docs/adr/0052-one-credential-core.md): the owner's list, read and revocation,
 * the organization's (admins), a member's removal across every kind, the usage fields. Each change and its audit entry
 * (a revocation becomes a SET on the revocation feed) commit together.
 */
@Injectable()
export class CredentialsService {
  constructor(
    private readonly kinds: CredentialKinds,
    private readonly uses: CredentialUseRecorder,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    private readonly identity: IdentityService,
  ) {}

  /** The caller's credentials of one kind, newest first, within the list window (docs/api.md#conventions). */
  async list<T extends Credential>(
    store: CredentialsRepository<T>,
    owner: OwnerIds,
    query: ListCredentialsQuery,
  ): Promise<Page<T>> {
    const { items, totalCount } = await store.findPageByOwner(owner, windowOf(query));
    return this.pageOf(items, query, totalCount);
  }

  /** The caller's own credential; someone else's is "not found", never "forbidden". */
  async get<T extends Credential>(store: CredentialsRepository<T>, owner: OwnerIds, id: string): Promise<T> {
    const credential = await store.findById(id);
    if (credential === undefined || !ownedBy(credential, owner)) throw store.kind.notFound();
    return this.uses.withPendingUse(credential);
  }

  /** Revokes the caller's credential at once and for good (idempotent), audited with reason `user`. */
  async revoke<T extends Credential>(
    store: CredentialsRepository<T>,
    owner: CredentialOwner,
    id: string,
    request?: RequestContext,
  ): Promise<T> {
    const at = new Date();
    await this.unitOfWork.run(async (tx) => {
      if (!(await store.revoke(owner, id, at, tx))) return;
      await this.audit.record({ ...revocation(store, id, 'user'), ...actor(owner), request }, tx);
    });
    return this.get(store, owner, id);
  }

  /** The organization's credentials of one kind (or one user's), newest first, with the owners' e-mails. */
  async listInOrganization<T extends Credential>(
    store: CredentialsRepository<T>,
    caller: OwnerIds,
    query: OrganizationCredentialsQuery,
  ): Promise<WithOwnerEmails & { page: Page<T> }> {
    let userId = query.userId;
    if (query.email !== undefined) {
      const byEmail = await this.identity.userIdByEmail(query.email);
      // No such user, or another one than user_id names: nothing matches.
      if (byEmail === null || (userId !== undefined && userId !== byEmail)) {
        const page = { items: [], page: query.page, limit: query.limit, totalCount: 0 };
        return { page, emails: new Map(), revokers: new Map() };
      }
      userId = byEmail;
    }
    const window = windowOf(query);
    const { items, totalCount } =
      userId === undefined
        ? await store.findPageByOrganization(caller.organizationId, window)
        : await store.findPageByOwner({ userId, organizationId: caller.organizationId }, window);
    return {
      page: this.pageOf(items, query, totalCount),
      ...(await this.ownersAndRevokers(caller.organizationId, items, store.kind)),
    };
  }

  /** Revokes any credential of the organization (idempotent), audited with reason `admin`. */
  async revokeInOrganization<T extends Credential>(
    store: CredentialsRepository<T>,
    caller: CredentialOwner,
    id: string,
    request?: RequestContext,
  ): Promise<WithOwnerEmails & { credential: T }> {
    const at = new Date();
    await this.unitOfWork.run(async (tx) => {
      if (!(await store.revokeInOrganization(caller.organizationId, id, at, tx))) return;
      await this.audit.record({ ...revocation(store, id, 'admin'), ...actor(caller), request }, tx);
    });
    return this.getInOrganization(store, caller, id);
  }

  /** Any credential of the caller's organization, with its owner's e-mail; another organization's is "not found". */
  async getInOrganization<T extends Credential>(
    store: CredentialsRepository<T>,
    caller: OwnerIds,
    id: string,
  ): Promise<WithOwnerEmails & { credential: T }> {
    const credential = await store.findById(id);
    if (credential === undefined || credential.organizationId !== caller.organizationId) throw store.kind.notFound();
    return {
      credential: this.uses.withPendingUse(credential),
      ...(await this.ownersAndRevokers(caller.organizationId, [credential], store.kind)),
    };
  }

  /**
   * The owners' e-mail addresses and who revoked each revoked credential, for a page of them without a read per row:
   * one read of the revocations' audit entries (through the target index, only when some are revoked) and one of
   * every owner's and revoker's address.
   */
  private async ownersAndRevokers(
    organizationId: string,
    credentials: readonly Credential[],
    kind: { revokedAction: AuditEvent['action'] },
  ): Promise<WithOwnerEmails> {
    const revoked = credentials
      .filter((credential) => credential.revokedAt !== null)
      .map((credential) => credential.id);
    const events =
      revoked.length === 0
        ? new Map<string, AuditEvent>()
        : await this.audit.latestOfEach(organizationId, kind.revokedAction, revoked);
    const revokerIds = [...events.values()].flatMap((event) => (event.actorUserId === null ? [] : [event.actorUserId]));
    const emails = await this.identity.emailsOf([...credentials.map((credential) => credential.userId), ...revokerIds]);
    const revokers = new Map([...events].map(([id, event]) => [id, revokerOf(event, emails)]));
    return { emails, revokers };
  }

  /**
   * Who revoked the credential and why, as its revocation's audit entry says (docs/api.md#who-revoked-a-credential):
   * one read through the audit trail's target index, no column of its own. null while it is not revoked, and when no
   * entry says any more (past the audit retention).
   */
  async revokedBy(credential: Credential, kind: { revokedAction: AuditEvent['action'] }): Promise<Revoker | null> {
    if (credential.revokedAt === null) return null;
    const event = (await this.audit.latestOfEach(credential.organizationId, kind.revokedAction, [credential.id])).get(
      credential.id,
    );
    if (event === undefined) return null;
    const userId = event.actorUserId;
    return revokerOf(event, userId === null ? new Map() : await this.identity.emailsOf([userId]));
  }

  /**
   * Revokes, inside `tx` (a member's removal: MembersService.remove), every ACTIVE credential of the member in the
   * organization, of every kind. `tx` must run in {@link memberQueue}: each kind's owner lock is taken here, so a
   * credential created meanwhile is revoked or refused (docs/api.md#removing-a-member). The audit entries are the
   * caller's to record with its own.
   */
  async revokeMemberCredentials(owner: OwnerIds, at: Date, tx: Transaction): Promise<MemberRevocation> {
    const revoked: Record<string, number> = {};
    const entries: AuditEntry[] = [];
    for (const store of this.kinds.all()) {
      await store.lockOwner(owner, tx);
      const ids = await store.revokeAllOf(owner, at, tx);
      revoked[store.kind.name] = ids.length;
      entries.push(...revocations(store, ids, owner.organizationId, 'member_removed'));
    }
    return { revoked, entries };
  }

  /** The queue a member's removal runs in: the one of their credentials' creations (UnitOfWork's queueKey). */
  memberQueue(owner: OwnerIds): string {
    return ownerQueue(owner);
  }

  /** A successful use: kept in memory, written in the recorder's next batch (docs/api.md#usage-fields). */
  recordUse<T extends Credential>(
    store: CredentialsRepository<T>,
    id: string,
    ip: string | null,
    userAgent: string | null,
    at = new Date(),
  ): void {
    this.uses.record(id, { at, ip, userAgent, store });
  }

  /** The credential with this instance's pending use in its usage fields. */
  withPendingUse<T extends Credential>(credential: T): T {
    return this.uses.withPendingUse(credential);
  }

  private pageOf<T extends Credential>(items: T[], query: ListCredentialsQuery, totalCount: number): Page<T> {
    const withUse = items.map((credential) => this.uses.withPendingUse(credential));
    return { items: withUse, page: query.page, limit: query.limit, totalCount };
  }
}

/** The window of page `page` of `limit` rows, cut at the list window (docs/api.md#conventions). */
function windowOf(query: ListCredentialsQuery): PageWindow {
  const offset = (query.page - 1) * query.limit;
  return {
    limit: Math.max(0, Math.min(query.limit, LIST_WINDOW - offset)),
    offset,
    includeRevoked: query.includeRevoked,
  };
}

function revocation(
  store: Pick<KindStore, 'kind'>,
  id: string,
  reason: string,
): Pick<AuditEntry, 'action' | 'reason' | 'targetType' | 'targetId'> {
  return { action: store.kind.revokedAction, reason, targetType: store.kind.name, targetId: id };
}

/** The audit entries of revocations without an actor (each becomes a credential-change on the revocation feed). */
export function revocations(
  store: Pick<KindStore, 'kind'>,
  ids: readonly string[],
  organizationId: string,
  reason: string,
): AuditEntry[] {
  return ids.map((id) => ({ ...revocation(store, id, reason), organizationId }));
}

/** The revocation as its audit entry tells it, the revoker's address from `emails`. */
function revokerOf(event: AuditEvent, emails: ReadonlyMap<string, string>): Revoker {
  const userId = event.actorUserId;
  return {
    at: event.occurredAt,
    reason: event.reason,
    userId,
    email: (userId === null ? undefined : emails.get(userId)) ?? null,
    apiKeyId: event.actorApiKeyId,
  };
}
