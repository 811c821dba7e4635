import { createHash, randomBytes, randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { CredentialsService } from '../credentials/credentials.service';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { AppError } from '../common/errors';
import type { Page } from '../common/pagination';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Transaction, UnitOfWork } from '../database/unit-of-work';
import type { MemberRow, RoleChange } from '../identity/identity.repository';
import { IdentityService, isEmailAddress, sleepUntil } from '../identity/identity.service';
import type { Role } from '../identity/roles';
import { MemberInvitation } from './member-invitation.entity';
import { MemberInvitationsRepository, UnusableInvitation } from './member-invitations.repository';

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
  /** The member as they were, when removed. */
  member?: MemberRow;
}

/** What a just-in-time membership did: added, a member already, or refused (an admin removed them). */
export type JustInTimeOutcome = 'added' | 'member' | 'removed';

/** A pending invitation with the invited person's e-mail address. */
export interface PendingInvitation {
  invitation: MemberInvitation;
  email: string;
}

/** A new invitation and its link, whose code exists nowhere else: shown once. */
export interface NewInvitation extends PendingInvitation {
  url: string;
}

/** Whom an invitation's code signs in, or why it signs in no one. */
export type InvitationAcceptance =
  { accepted: { organizationId: string; userId: string } } | { refused: UnusableInvitation | 'invalid' };

/** How long an invitation's link can be used (docs/api.md#members): a week, as Auth0's default. */
export const INVITATION_SECONDS = 7 * 24 * 3600;
/** Invitations expired (or used and expired) longer ago than this are deleted whenever a new one is made. */
const KEEP_EXPIRED_MS = 24 * 3600 * 1000;
/** 32 random bytes, unpadded base64url: 43 characters. */
const CODE = /^[A-Za-z0-9_-]{43}$/;

const sha256 = (value: string): string => createHash('sha256').update(value, 'utf8').digest('hex');

const lastAdmin = (): AppError =>
  new AppError('last_admin', {
    message: 'an organization keeps at least one admin: make another member an admin first',
  });

/**
 * The member lifecycle (docs/adr/0044-one-member-lifecycle.md): every way a person becomes a member, changes role or
 * stops being one goes through here, whoever asks (the admin CLI, single sign-on's just-in-time membership, an
 * invitation, the API), each change audited in its transaction, with the same rules: the last admin is neither removed
 * nor made anything else (docs/adr/0057-members-and-single-sign-on-in-the-console.md). A removal revokes the member's
 * credentials (keys, workload identities, grants, a pending invitation; their session tokens die with the membership)
 * and is remembered: single sign-on never adds a removed person again, only an admin does.
 */
@Injectable()
export class MembersService {
  private readonly publicBaseUrl: string;

  constructor(
    private readonly identity: IdentityService,
    private readonly credentials: CredentialsService,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    private readonly invitations: MemberInvitationsRepository,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.publicBaseUrl = config.console.publicBaseUrl;
  }

  /**
   * An admin sets the person's role: adds them (again, after a removal: the removal is forgotten) or changes it,
   * audited `member.added` (reason `admin`) or `member.role_changed` (reason: the new role) in the same transaction.
   * The organization's last admin keeps the role (`last_admin`).
   */
  async setRole(organizationId: string, userId: string, role: Role, by: MemberChangeBy = {}): Promise<RoleChange> {
    return this.unitOfWork.run(async (tx) => (await this.applyRole(organizationId, userId, role, by, tx)).change);
  }

  /**
   * An admin changes a member's role (the API's PATCH: a person who is not a member is `member_not_found`, never
   * added), as setRole otherwise. Returns the member as the change left them.
   */
  async changeRole(organizationId: string, userId: string, role: Role, by: MemberChangeBy = {}): Promise<MemberRow> {
    const changed = await this.unitOfWork.run(async (tx) => {
      const current = await this.identity.membership(organizationId, userId, tx);
      if (current === null) throw new AppError('member_not_found');
      await this.applyRole(organizationId, userId, role, by, tx);
      return { ...current, role };
    });
    return this.memberRow(organizationId, userId, changed);
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

  /** A page of the organization's members, by e-mail address. */
  async list(organizationId: string, page: number, limit: number): Promise<Page<MemberRow>> {
    const { members, total } = await this.identity.members(organizationId, limit, (page - 1) * limit);
    return { items: members, page, limit, totalCount: total };
  }

  /**
   * Removes the member: the membership (their session tokens stop at once), every credential of theirs in the
   * organization revoked (each kind of CredentialKinds: keys, workload identities, grants), a pending invitation
   * withdrawn, and the removal remembered, audited in one transaction under the owner's lock, so a creation meanwhile is
   * revoked or refused (docs/api.md#removing-a-member). The last admin stays (`last_admin`).
   */
  async remove(organizationId: string, userId: string, by: MemberChangeBy = {}): Promise<MemberRemoval> {
    const owner = { organizationId, userId };
    const at = new Date();
    const removal = await this.unitOfWork.run(
      async (tx) => {
        const admins = await this.identity.countAdminsLocked(organizationId, tx);
        const current = await this.identity.membership(organizationId, userId, tx);
        if (current === null) return null;
        if (current.role === 'admin' && admins <= 1) throw lastAdmin();
        await this.identity.removeMember(organizationId, userId, tx);
        await this.invitations.deletePending(organizationId, userId, tx);
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
        return { revokedKeys, membership: current };
      },
      { queueKey: this.credentials.memberQueue(owner) },
    );
    if (removal === null) return { removed: false, revokedKeys: 0 };
    // A membership begun again starts in a later second than any session token of this one (iat).
    await sleepUntil((Math.floor(Date.now() / 1000) + 1) * 1000);
    const member = await this.memberRow(organizationId, userId, removal.membership);
    return { removed: true, revokedKeys: removal.revokedKeys, member };
  }

  /**
   * An admin invites a person by e-mail address with a role: a one-time link valid INVITATION_SECONDS, which signs
   * them in as a member (acceptInvitation). It replaces their pending invitation, if any; a member already is
   * `member_exists`. Audited `member.invited` (reason: the role). The code is in the link alone.
   */
  async invite(
    organizationId: string,
    email: string,
    role: Role,
    by: MemberChangeBy = {},
    now = new Date(),
  ): Promise<NewInvitation> {
    if (!isEmailAddress(email)) {
      throw new AppError('member_email_invalid', { message: 'email must be an e-mail address' });
    }
    const user = await this.identity.ensureUser(email);
    const code = randomBytes(32).toString('base64url');
    const invitation = Object.assign(new MemberInvitation(), {
      id: randomUUID(),
      organizationId,
      userId: user.id,
      role,
      codeHash: sha256(code),
      invitedByUserId: by.actorUserId ?? null,
      createdAt: now,
      expiresAt: new Date(now.getTime() + INVITATION_SECONDS * 1000),
      acceptedAt: null,
    });
    await this.unitOfWork.run(async (tx) => {
      if ((await this.identity.membership(organizationId, user.id, tx)) !== null) {
        throw new AppError('member_exists', { message: `${user.email} is a member already` });
      }
      await this.invitations.pruneExpired(new Date(now.getTime() - KEEP_EXPIRED_MS), tx);
      await this.invitations.replacePending(invitation, tx);
      await this.audit.record(
        {
          action: 'member.invited',
          organizationId,
          targetType: 'user',
          targetId: user.id,
          reason: role,
          actorUserId: by.actorUserId ?? null,
          actorApiKeyId: by.actorApiKeyId ?? null,
          request: by.request,
        },
        tx,
      );
    });
    return { invitation, email: user.email, url: `${this.publicBaseUrl}/console/sign-in#invitation=${code}` };
  }

  /** The organization's invitations neither used nor expired, newest first (never a code). */
  async pendingInvitations(organizationId: string, now = new Date()): Promise<PendingInvitation[]> {
    const invitations = await this.invitations.findPending(organizationId, now);
    const emails = await this.identity.emailsOf(invitations.map((invitation) => invitation.userId));
    return invitations.map((invitation) => ({ invitation, email: emails.get(invitation.userId) ?? '' }));
  }

  /** An admin withdraws an unused invitation (`invitation_not_found` otherwise), audited `member.invitation_revoked`. */
  async revokeInvitation(organizationId: string, id: string, by: MemberChangeBy = {}): Promise<PendingInvitation> {
    const invitation = await this.unitOfWork.run(async (tx) => {
      const deleted = await this.invitations.deleteUnused(organizationId, id, tx);
      if (deleted === null) throw new AppError('invitation_not_found');
      await this.audit.record(
        {
          action: 'member.invitation_revoked',
          organizationId,
          targetType: 'user',
          targetId: deleted.userId,
          reason: deleted.role,
          actorUserId: by.actorUserId ?? null,
          actorApiKeyId: by.actorApiKeyId ?? null,
          request: by.request,
        },
        tx,
      );
      return deleted;
    });
    const email = (await this.identity.emailsOf([invitation.userId])).get(invitation.userId) ?? '';
    return { invitation, email };
  }

  /**
   * Uses an invitation's code, once: the person becomes a member with its role (audited `member.added`, reason
   * `invitation`, the person as actor; an admin's removal before the invitation is forgotten, as setRole forgets it),
   * or keeps the role they have if they became a member meanwhile. The console then signs them in.
   */
  async acceptInvitation(code: string, request?: RequestContext, now = new Date()): Promise<InvitationAcceptance> {
    if (!CODE.test(code)) return { refused: 'invalid' };
    const codeHash = sha256(code);
    const invitation = await this.unitOfWork.run(async (tx) => {
      const consumed = await this.invitations.consume(codeHash, now, tx);
      if (consumed === null) return null;
      const { organizationId, userId } = consumed;
      if ((await this.identity.membership(organizationId, userId, tx)) === null) {
        await this.identity.setRole(organizationId, userId, consumed.role, tx);
        await this.identity.forgetRemoval(organizationId, userId, tx);
        await this.audit.record(
          {
            action: 'member.added',
            organizationId,
            targetType: 'user',
            targetId: userId,
            reason: 'invitation',
            actorUserId: userId,
            request,
          },
          tx,
        );
      }
      return consumed;
    });
    if (invitation === null) return { refused: (await this.invitations.unusableReason(codeHash, now)) ?? 'invalid' };
    return { accepted: { organizationId: invitation.organizationId, userId: invitation.userId } };
  }

  /**
   * Sets the role inside `tx`, once the organization's admins are counted under its lock: an admin made anything else
   * must leave one. Audited as setRole says.
   */
  private async applyRole(
    organizationId: string,
    userId: string,
    role: Role,
    by: MemberChangeBy,
    tx: Transaction,
  ): Promise<{ change: RoleChange }> {
    if (role !== 'admin') {
      const admins = await this.identity.countAdminsLocked(organizationId, tx);
      const current = await this.identity.membership(organizationId, userId, tx);
      if (current?.role === 'admin' && admins <= 1) throw lastAdmin();
    }
    const change = await this.identity.setRole(organizationId, userId, role, tx);
    if (change === 'unchanged') return { change };
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
    return { change };
  }

  /** The member as the members page shows them. */
  private async memberRow(
    organizationId: string,
    userId: string,
    membership: { role: Role; createdAt: Date; lastSignedInAt: Date | null },
  ): Promise<MemberRow> {
    const email = (await this.identity.emailsOf([userId])).get(userId) ?? '';
    return {
      userId,
      email,
      role: membership.role,
      joinedAt: membership.createdAt,
      lastSignedInAt: membership.lastSignedInAt,
    };
  }
}
