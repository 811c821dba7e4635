import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable } from '@nestjs/common';
import { AppError } from '../common/errors';
import type { Transaction } from '../database/unit-of-work';
import { IdentityRepository, JustInTimeJoin, MemberRow, RoleChange } from './identity.repository';
import type { MembershipAccess, SessionAccess } from './member-access';
import { Membership } from './membership.entity';
import {
  DEFAULT_ACCESS_TOKEN_LIFETIME,
  MAX_ACCESS_TOKEN_LIFETIME,
  MAX_KEY_LIFETIME_DAYS,
  MIN_ACCESS_TOKEN_LIFETIME,
  MIN_KEY_LIFETIME_DAYS,
  Organization,
  OrganizationSettings,
} from './organization.entity';
import type { Role } from './roles';
import { User } from './user.entity';

export class IdentityError extends AppError {
  constructor(reason: 'organization_not_found' | 'user_not_found', message?: string) {
    super(reason, { message });
  }
}

/** Organizations, users and memberships; other modules read them through this service or the member_access view. */
@Injectable()
export class IdentityService {
  constructor(private readonly identity: IdentityRepository) {}

  /** Role and token lifetime of the user in the organization, or null when not a member. */
  access(organizationId: string, userId: string): Promise<MembershipAccess | null> {
    return this.identity.findAccess(organizationId, userId);
  }

  /** The role and session validity of the membership, or null when not a member (every session-token request). */
  sessionAccess(organizationId: string, userId: string): Promise<SessionAccess | null> {
    return this.identity.findSessionAccess(organizationId, userId);
  }

  /**
   * The membership's session access (null: not a member), once a session token issued now is valid: after a sign-out
   * in this second, it waits for the next one (`iat` is in whole seconds; docs/adr/0025-session-sign-out.md).
   */
  async readyForSession(organizationId: string, userId: string): Promise<SessionAccess | null> {
    const access = await this.identity.findSessionAccess(organizationId, userId);
    if (access !== null) await sleepUntil(access.minIssuedAt * 1000);
    return access;
  }

  /** Ends every session token of the member issued until now (the console's sign-out); false when not a member. */
  endSessions(organizationId: string, userId: string, at = new Date()): Promise<boolean> {
    return this.identity.updateSessionsValidAfter(organizationId, userId, at);
  }

  /** Whether the database holds any organization (the admin CLI warns when it had none). */
  hasOrganizations(): Promise<boolean> {
    return this.identity.hasOrganizations();
  }

  async ensureOrganization(name: string): Promise<Organization> {
    const existing = await this.identity.findOrganizationByName(name);
    if (existing !== null) return existing;
    await this.identity.insertOrganizationIfMissing(name, DEFAULT_ACCESS_TOKEN_LIFETIME, new Date());
    return this.organizationByName(name);
  }

  async ensureUser(email: string): Promise<User> {
    const normalized = normalizeEmail(email);
    const existing = await this.identity.findUserByEmail(normalized);
    if (existing !== null) return existing;
    await this.identity.insertUserIfMissing(normalized, new Date());
    return this.userByEmail(normalized);
  }

  /*
   * The membership rows. The member lifecycle (adding, changing a role, removing, each audited, a removal with the
   * member's credentials) is MembersService's (docs/adr/0044-one-member-lifecycle.md); tests use these as fixtures.
   */

  /** Sets the role (adds the membership if missing), inside `tx` when given; a change of role is audited by the caller. */
  setRole(organizationId: string, userId: string, role: Role, tx?: Transaction): Promise<RoleChange> {
    return this.identity.upsertMembershipRole(organizationId, userId, role, new Date(), tx);
  }

  /**
   * A just-in-time membership with `role`, inside `tx`: added unless the user is a member already, or an admin removed
   * them (nothing is written then: only an admin adds a removed person again).
   */
  joinJustInTime(organizationId: string, userId: string, role: Role, tx: Transaction): Promise<JustInTimeJoin> {
    return this.identity.joinJustInTime(organizationId, userId, role, new Date(), tx);
  }

  /** Whether an admin removed the user from the organization, and nobody has added them again since. */
  wasRemoved(organizationId: string, userId: string, tx?: Transaction): Promise<boolean> {
    return this.identity.isRemoved(organizationId, userId, tx);
  }

  /** The membership, read inside `tx` when given; null when the user is not a member. */
  membership(organizationId: string, userId: string, tx?: Transaction): Promise<Membership | null> {
    return this.identity.findMembership(organizationId, userId, tx);
  }

  /** The organization's admins, counted inside `tx` under a lock held until it ends (MembersService's last-admin rule). */
  countAdminsLocked(organizationId: string, tx: Transaction): Promise<number> {
    return this.identity.countAdminsLocked(organizationId, tx);
  }

  /** A page of the organization's members, by e-mail address, and how many there are. */
  members(organizationId: string, limit: number, offset: number): Promise<{ members: MemberRow[]; total: number }> {
    return this.identity.findMembers(organizationId, limit, offset);
  }

  /** Notes the member's console sign-in (the members page's "last sign-in"). */
  recordSignIn(organizationId: string, userId: string, at = new Date()): Promise<void> {
    return this.identity.updateLastSignIn(organizationId, userId, at);
  }

  /** Forgets an admin's removal of the user, inside `tx` (an admin adds them again). */
  forgetRemoval(organizationId: string, userId: string, tx: Transaction): Promise<void> {
    return this.identity.deleteRemoval(organizationId, userId, tx);
  }

  /**
   * The membership only, and the removal remembered (single sign-on adds nobody removed); removing a member with their
   * credentials is MembersService.remove. False when there was no membership.
   */
  removeMember(organizationId: string, userId: string, tx?: Transaction): Promise<boolean> {
    return this.identity.deleteMembership(organizationId, userId, new Date(), tx);
  }

  /** Changes the given settings (docs/api.md#organization-settings); the organization as the change left it. */
  async updateSettings(
    organizationId: string,
    settings: OrganizationSettings,
    tx?: Transaction,
  ): Promise<Organization> {
    assertSettings(settings);
    const organization = await this.identity.updateSettings(organizationId, settings, new Date(), tx);
    if (organization === null) throw new IdentityError('organization_not_found');
    return organization;
  }

  /** A test fixture: no audit entry (the API and CLI go through OrganizationSettingsService). */
  async setAccessTokenLifetime(organizationId: string, seconds: number): Promise<void> {
    await this.updateSettings(organizationId, { accessTokenLifetime: seconds });
  }

  /** The organization with its settings (token lifetime, key policy). */
  async organizationById(id: string): Promise<Organization> {
    const organization = await this.identity.findOrganizationById(id);
    if (organization === null) throw new IdentityError('organization_not_found');
    return organization;
  }

  async organizationByName(name: string): Promise<Organization> {
    const organization = await this.identity.findOrganizationByName(name);
    if (organization === null) throw new IdentityError('organization_not_found', `organization not found: ${name}`);
    return organization;
  }

  /** The e-mail addresses of these users, to show beside their ids (one query). */
  emailsOf(ids: Iterable<string>): Promise<Map<string, string>> {
    return this.identity.findEmails([...new Set(ids)]);
  }

  /** The id of the user with this e-mail address (any case), or null. */
  async userIdByEmail(email: string): Promise<string | null> {
    return (await this.identity.findUserByEmail(normalizeEmail(email)))?.id ?? null;
  }

  async userByEmail(email: string): Promise<User> {
    const user = await this.identity.findUserByEmail(normalizeEmail(email));
    if (user === null) throw new IdentityError('user_not_found', `user not found: ${email}`);
    return user;
  }

  /** The user's memberships, oldest first. */
  membershipsOf(userId: string): Promise<Membership[]> {
    return this.identity.findMembershipsOf(userId);
  }
}

const within = (value: number, min: number, max: number): boolean =>
  Number.isInteger(value) && value >= min && value <= max;

/** The service's own check of the bounds: its callers (the API's DTO, the CLI) check them first. */
function assertSettings(settings: OrganizationSettings): void {
  const { accessTokenLifetime, maxKeyLifetimeDays } = settings;
  if (
    accessTokenLifetime !== undefined &&
    !within(accessTokenLifetime, MIN_ACCESS_TOKEN_LIFETIME, MAX_ACCESS_TOKEN_LIFETIME)
  ) {
    throw new AppError('organization_settings_invalid', {
      message: `access token lifetime must be ${MIN_ACCESS_TOKEN_LIFETIME}..${MAX_ACCESS_TOKEN_LIFETIME} seconds`,
    });
  }
  if (
    maxKeyLifetimeDays !== undefined &&
    maxKeyLifetimeDays !== null &&
    !within(maxKeyLifetimeDays, MIN_KEY_LIFETIME_DAYS, MAX_KEY_LIFETIME_DAYS)
  ) {
    throw new AppError('organization_settings_invalid', {
      message: `max key lifetime must be ${MIN_KEY_LIFETIME_DAYS}..${MAX_KEY_LIFETIME_DAYS} days or none`,
    });
  }
}

function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}

const EMAIL = /^[^\s@]+@[^\s@]+$/;
export const MAX_EMAIL_LENGTH = 320;

/** Whether `value` (trimmed) can be a user's e-mail address: the admin CLI's `--email` and an invitation's. */
export function isEmailAddress(value: string): boolean {
  const address = value.trim();
  return EMAIL.test(address) && address.length <= MAX_EMAIL_LENGTH;
}

/** Resolves once the wall clock has reached `ms` (a timer may fire a millisecond early by Date.now()). */
export async function sleepUntil(ms: number): Promise<void> {
  for (let wait = ms - Date.now(); wait > 0; wait = ms - Date.now()) await sleep(wait + 1);
}
