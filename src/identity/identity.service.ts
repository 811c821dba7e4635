import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { AppError, ErrorCode } from '../common/errors';
import { Statement } from '../database/statement';
import { Membership } from './membership.entity';
import {
  DEFAULT_ACCESS_TOKEN_LIFETIME,
  MAX_ACCESS_TOKEN_LIFETIME,
  MIN_ACCESS_TOKEN_LIFETIME,
  Organization,
} from './organization.entity';
import { Role } from './roles';
import { User } from './user.entity';

/** What the hot paths need to know about a user inside one organization, in one query. */
export interface MembershipAccess {
  role: Role;
  accessTokenLifetime: number;
}

/** Columns and joins that another module's statement takes in (see IdentityService.membershipJoin). */
export interface MembershipJoin {
  columns: string;
  joins: string;
}

/** The columns a MembershipJoin adds to a row. */
export interface MembershipColumns {
  member_role: Role | null;
  member_token_lifetime: number | string | null;
}

export class IdentityError extends AppError {
  constructor(message: string) {
    super(ErrorCode.NOT_FOUND, message);
  }
}

/**
 * Organizations, users and memberships. Everything else asks this service; nothing outside this
 * module touches these tables.
 */
@Injectable()
export class IdentityService {
  // Fixed statements, no query building: role() is asked on every session-token request.
  private readonly accessStatement: Statement<MembershipColumns>;
  private readonly roleStatement: Statement<{ role: Role }>;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(Organization) private readonly organizations: Repository<Organization>,
    @InjectRepository(User) private readonly users: Repository<User>,
    @InjectRepository(Membership) private readonly memberships: Repository<Membership>,
  ) {
    this.accessStatement = new Statement(
      dataSource,
      `SELECT m.role AS member_role, o.access_token_lifetime AS member_token_lifetime
       FROM memberships m JOIN organizations o ON o.id = m.organization_id
       WHERE m.organization_id = $1 AND m.user_id = $2`,
    );
    this.roleStatement = new Statement(
      dataSource,
      'SELECT role FROM memberships WHERE organization_id = $1 AND user_id = $2',
    );
  }

  /**
   * The membership half of another module's hot-path statement, so that a step that needs a key
   * and its owner's membership reads both in one query (DESIGN.md section 5: on PostgreSQL every
   * query is a round trip). Left-joins the membership of the user in column `userColumn` in the
   * organization in column `organizationColumn`, as the columns `member_role` and
   * `member_token_lifetime` (both null when not a member). The SQL on these tables stays in this
   * module; memberAccess() reads the columns back.
   */
  membershipJoin(organizationColumn: string, userColumn: string): MembershipJoin {
    return {
      columns: 'gh_m.role AS member_role, gh_o.access_token_lifetime AS member_token_lifetime',
      joins: `LEFT JOIN memberships gh_m ON gh_m.organization_id = ${organizationColumn} AND gh_m.user_id = ${userColumn}
       LEFT JOIN organizations gh_o ON gh_o.id = gh_m.organization_id`,
    };
  }

  /** Role and token lifetime from a row with membershipJoin()'s columns, or null when not a member. */
  memberAccess(row: MembershipColumns): MembershipAccess | null {
    if (row.member_role === null || row.member_token_lifetime === null) return null;
    return { role: row.member_role, accessTokenLifetime: Number(row.member_token_lifetime) };
  }

  /** Role and token lifetime of the user in the organization, or null when not a member. */
  async access(organizationId: string, userId: string): Promise<MembershipAccess | null> {
    const row = await this.accessStatement.first([organizationId, userId]);
    return row === undefined ? null : this.memberAccess(row);
  }

  /** The user's role in the organization, or null when not a member (every Bearer request). */
  async role(organizationId: string, userId: string): Promise<Role | null> {
    return (await this.roleStatement.first([organizationId, userId]))?.role ?? null;
  }

  async ensureOrganization(name: string): Promise<Organization> {
    const existing = await this.organizations.findOneBy({ name });
    if (existing !== null) return existing;
    const now = new Date();
    await this.organizations
      .createQueryBuilder()
      .insert()
      .values({
        id: randomUUID(),
        name,
        accessTokenLifetime: DEFAULT_ACCESS_TOKEN_LIFETIME,
        createdAt: now,
        updatedAt: now,
      })
      .orIgnore()
      .execute();
    return this.organizations.findOneByOrFail({ name });
  }

  async ensureUser(email: string): Promise<User> {
    const normalized = email.trim().toLowerCase();
    const existing = await this.users.findOneBy({ email: normalized });
    if (existing !== null) return existing;
    await this.users
      .createQueryBuilder()
      .insert()
      .values({ id: randomUUID(), email: normalized, createdAt: new Date() })
      .orIgnore()
      .execute();
    return this.users.findOneByOrFail({ email: normalized });
  }

  async setRole(organizationId: string, userId: string, role: Role): Promise<void> {
    const now = new Date();
    await this.dataSource.transaction(async (manager) => {
      const existing = await manager.findOneBy(Membership, { organizationId, userId });
      if (existing === null) {
        await manager.insert(Membership, { organizationId, userId, role, createdAt: now, updatedAt: now });
      } else if (existing.role !== role) {
        await manager.update(Membership, { organizationId, userId }, { role, updatedAt: now });
      }
    });
  }

  /** Adds the membership only when the user has none in that organization yet. */
  async ensureMembership(organizationId: string, userId: string, role: Role): Promise<Role> {
    const existing = await this.memberships.findOneBy({ organizationId, userId });
    if (existing !== null) return existing.role;
    const now = new Date();
    await this.memberships
      .createQueryBuilder()
      .insert()
      .values({ organizationId, userId, role, createdAt: now, updatedAt: now })
      .orIgnore()
      .execute();
    return (await this.memberships.findOneByOrFail({ organizationId, userId })).role;
  }

  async removeMember(organizationId: string, userId: string): Promise<boolean> {
    const result = await this.memberships.delete({ organizationId, userId });
    return (result.affected ?? 0) > 0;
  }

  async setAccessTokenLifetime(organizationId: string, seconds: number): Promise<void> {
    if (!Number.isInteger(seconds) || seconds < MIN_ACCESS_TOKEN_LIFETIME || seconds > MAX_ACCESS_TOKEN_LIFETIME) {
      throw new AppError(
        ErrorCode.INVALID_ARGUMENT,
        `access token lifetime must be ${MIN_ACCESS_TOKEN_LIFETIME}..${MAX_ACCESS_TOKEN_LIFETIME} seconds`,
      );
    }
    await this.organizations.update({ id: organizationId }, { accessTokenLifetime: seconds, updatedAt: new Date() });
  }

  async organizationByName(name: string): Promise<Organization> {
    const organization = await this.organizations.findOneBy({ name });
    if (organization === null) throw new IdentityError(`organization not found: ${name}`);
    return organization;
  }

  async userByEmail(email: string): Promise<User> {
    const user = await this.users.findOneBy({ email: email.trim().toLowerCase() });
    if (user === null) throw new IdentityError(`user not found: ${email}`);
    return user;
  }

  /** The user's memberships, oldest first. */
  async membershipsOf(userId: string): Promise<Membership[]> {
    return this.memberships.find({ where: { userId }, order: { createdAt: 'ASC', organizationId: 'ASC' } });
  }
}
