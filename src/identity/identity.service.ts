import { Injectable } from '@nestjs/common';
import { AppError, ErrorCode } from '../common/errors';
import { IdentityRepository } from './identity.repository';
import type { MembershipAccess } from './member-access';
import { Membership } from './membership.entity';
import {
  DEFAULT_ACCESS_TOKEN_LIFETIME,
  MAX_ACCESS_TOKEN_LIFETIME,
  MIN_ACCESS_TOKEN_LIFETIME,
  Organization,
} from './organization.entity';
import type { Role } from './roles';
import { User } from './user.entity';

export class IdentityError extends AppError {
  constructor(message: string) {
    super(ErrorCode.NOT_FOUND, message);
  }
}

/**
 * Organizations, users and memberships: the rules (e-mail normalisation, lifetime bounds, "ensure"
 * semantics). Every query is IdentityRepository's; nothing outside this module touches these tables
 * (other modules' hot-path queries join the published member_access view, member-access.ts).
 */
@Injectable()
export class IdentityService {
  constructor(private readonly identity: IdentityRepository) {}

  /** Role and token lifetime of the user in the organization, or null when not a member. */
  access(organizationId: string, userId: string): Promise<MembershipAccess | null> {
    return this.identity.findAccess(organizationId, userId);
  }

  /** The user's role in the organization, or null when not a member (every Bearer request). */
  role(organizationId: string, userId: string): Promise<Role | null> {
    return this.identity.findRole(organizationId, userId);
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

  setRole(organizationId: string, userId: string, role: Role): Promise<void> {
    return this.identity.upsertMembershipRole(organizationId, userId, role, new Date());
  }

  /** Adds the membership only when the user has none in that organization yet. */
  async ensureMembership(organizationId: string, userId: string, role: Role): Promise<Role> {
    const existing = await this.identity.findMembership(organizationId, userId);
    if (existing !== null) return existing.role;
    await this.identity.insertMembershipIfMissing(organizationId, userId, role, new Date());
    const membership = await this.identity.findMembership(organizationId, userId);
    if (membership === null) throw new IdentityError('membership not found');
    return membership.role;
  }

  removeMember(organizationId: string, userId: string): Promise<boolean> {
    return this.identity.deleteMembership(organizationId, userId);
  }

  async setAccessTokenLifetime(organizationId: string, seconds: number): Promise<void> {
    if (!Number.isInteger(seconds) || seconds < MIN_ACCESS_TOKEN_LIFETIME || seconds > MAX_ACCESS_TOKEN_LIFETIME) {
      throw new AppError(
        ErrorCode.INVALID_ARGUMENT,
        `access token lifetime must be ${MIN_ACCESS_TOKEN_LIFETIME}..${MAX_ACCESS_TOKEN_LIFETIME} seconds`,
      );
    }
    await this.identity.updateAccessTokenLifetime(organizationId, seconds, new Date());
  }

  /** The organization with its settings (token lifetime, key policy). */
  async organizationById(id: string): Promise<Organization> {
    const organization = await this.identity.findOrganizationById(id);
    if (organization === null) throw new IdentityError('organization not found');
    return organization;
  }

  async organizationByName(name: string): Promise<Organization> {
    const organization = await this.identity.findOrganizationByName(name);
    if (organization === null) throw new IdentityError(`organization not found: ${name}`);
    return organization;
  }

  async userByEmail(email: string): Promise<User> {
    const user = await this.identity.findUserByEmail(normalizeEmail(email));
    if (user === null) throw new IdentityError(`user not found: ${email}`);
    return user;
  }

  /** The user's memberships, oldest first. */
  membershipsOf(userId: string): Promise<Membership[]> {
    return this.identity.findMembershipsOf(userId);
  }
}

function normalizeEmail(email: string): string {
  return email.trim().toLowerCase();
}
