import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource, InjectRepository } from '@nestjs/typeorm';
import { DataSource, In, Repository } from 'typeorm';
import { toDate } from '../database/columns';
import { Dialect, param, raw, sql, Statement } from '../database/sql';
import { Transaction, UnitOfWork } from '../database/unit-of-work';
import {
  MEMBER_ACCESS_VIEW,
  MemberAccessColumns,
  MembershipAccess,
  SessionAccess,
  toMembershipAccess,
} from './member-access';
import { Membership } from './membership.entity';
import { Organization, OrganizationSettings } from './organization.entity';
import type { Role } from './roles';
import { User } from './user.entity';

/** What setting a role did to the membership. */
export type RoleChange = 'added' | 'changed' | 'unchanged';

interface MemberArgs {
  organizationId: string;
  userId: string;
}

/** Every query on organizations, users and memberships; the Bearer path's reads have fixed SQL. */
@Injectable()
export class IdentityRepository {
  private readonly db: Dialect;
  private readonly session: Statement<MemberArgs>;
  private readonly access: Statement<MemberArgs>;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    @InjectRepository(Organization) private readonly organizations: Repository<Organization>,
    @InjectRepository(User) private readonly users: Repository<User>,
    @InjectRepository(Membership) private readonly memberships: Repository<Membership>,
    private readonly unitOfWork: UnitOfWork,
  ) {
    this.db = Dialect.of(dataSource);
    const member = sql`organization_id = ${param('organizationId')} AND user_id = ${param('userId')}`;
    this.session = this.db.prepare(sql`SELECT role, created_at, sessions_valid_after FROM memberships WHERE ${member}`);
    this.access = this.db.prepare(
      sql`SELECT role, access_token_lifetime FROM ${raw(MEMBER_ACCESS_VIEW)} WHERE ${member}`,
    );
  }

  /** The role and the earliest issue time of a session token still valid (every session-token request). */
  async findSessionAccess(organizationId: string, userId: string): Promise<SessionAccess | null> {
    const rows = await this.db.rows<
      { role: Role; created_at: Date | string; sessions_valid_after: Date | string | null },
      MemberArgs
    >(this.session, { organizationId, userId });
    const row = rows[0];
    if (row === undefined) return null;
    const began = Math.floor(toDate(row.created_at).getTime() / 1000);
    if (row.sessions_valid_after === null) return { role: row.role, minIssuedAt: began };
    const signedOut = Math.floor(toDate(row.sessions_valid_after).getTime() / 1000) + 1;
    return { role: row.role, minIssuedAt: Math.max(began, signedOut) };
  }

  /** Ends the member's session tokens issued before `at`; false when there is no such membership. */
  async updateSessionsValidAfter(organizationId: string, userId: string, at: Date): Promise<boolean> {
    const result = await this.memberships.update({ organizationId, userId }, { sessionsValidAfter: at, updatedAt: at });
    return (result.affected ?? 0) > 0;
  }

  async findAccess(organizationId: string, userId: string): Promise<MembershipAccess | null> {
    const rows = await this.db.rows<MemberAccessColumns, MemberArgs>(this.access, { organizationId, userId });
    return rows[0] === undefined ? null : toMembershipAccess(rows[0]);
  }

  findOrganizationById(id: string): Promise<Organization | null> {
    return this.organizations.findOneBy({ id });
  }

  async hasOrganizations(): Promise<boolean> {
    return (await this.organizations.count({ take: 1 })) > 0;
  }

  findOrganizationByName(name: string): Promise<Organization | null> {
    return this.organizations.findOneBy({ name });
  }

  /** Adds the organization unless one of that name exists (a concurrent insert is not an error). */
  async insertOrganizationIfMissing(name: string, accessTokenLifetime: number, now: Date): Promise<void> {
    await this.organizations
      .createQueryBuilder()
      .insert()
      .values({ id: randomUUID(), name, accessTokenLifetime, createdAt: now, updatedAt: now })
      .orIgnore()
      .execute();
  }

  /** Sets only the given settings and reads the row back in the same transaction; null: no such organization. */
  async updateSettings(
    organizationId: string,
    settings: OrganizationSettings,
    now: Date,
    tx?: Transaction,
  ): Promise<Organization | null> {
    const organizations = tx?.getRepository(Organization) ?? this.organizations;
    const result = await organizations.update({ id: organizationId }, { ...settings, updatedAt: now });
    if ((result.affected ?? 0) === 0) return null;
    return organizations.findOneBy({ id: organizationId });
  }

  findUserByEmail(email: string): Promise<User | null> {
    return this.users.findOneBy({ email });
  }

  /** The e-mail addresses of these users (one query; an unknown id is left out). */
  async findEmails(ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const users = await this.users.find({ select: { id: true, email: true }, where: { id: In([...ids]) } });
    return new Map(users.map((user) => [user.id, user.email]));
  }

  /** Adds the user unless one with that e-mail exists (a concurrent insert is not an error). */
  async insertUserIfMissing(email: string, now: Date): Promise<void> {
    await this.users
      .createQueryBuilder()
      .insert()
      .values({ id: randomUUID(), email, createdAt: now })
      .orIgnore()
      .execute();
  }

  findMembership(organizationId: string, userId: string): Promise<Membership | null> {
    return this.memberships.findOneBy({ organizationId, userId });
  }

  /** Adds the membership unless the user has one in that organization (a concurrent insert is not an error). */
  async insertMembershipIfMissing(organizationId: string, userId: string, role: Role, now: Date): Promise<void> {
    await this.memberships
      .createQueryBuilder()
      .insert()
      .values({ organizationId, userId, role, createdAt: now, updatedAt: now })
      .orIgnore()
      .execute();
  }

  /**
   * Adds the membership with this role, or changes the role of the existing one, in one transaction
   * (through UnitOfWork, like every transaction: on SQLite they must not overlap).
   */
  /** Sets the role, adding the membership if missing (inside `tx` when given): what changed. */
  async upsertMembershipRole(
    organizationId: string,
    userId: string,
    role: Role,
    now: Date,
    tx?: Transaction,
  ): Promise<RoleChange> {
    const upsert = async (manager: Transaction): Promise<RoleChange> => {
      const existing = await manager.findOneBy(Membership, { organizationId, userId });
      if (existing === null) {
        await manager.insert(Membership, { organizationId, userId, role, createdAt: now, updatedAt: now });
        return 'added';
      }
      if (existing.role === role) return 'unchanged';
      await manager.update(Membership, { organizationId, userId }, { role, updatedAt: now });
      return 'changed';
    };
    return tx === undefined ? this.unitOfWork.run(upsert) : upsert(tx);
  }

  /** Removes the membership, inside `tx` when given; false when there was none. */
  async deleteMembership(organizationId: string, userId: string, tx?: Transaction): Promise<boolean> {
    const result = await (tx?.getRepository(Membership) ?? this.memberships).delete({ organizationId, userId });
    return (result.affected ?? 0) > 0;
  }

  /** The user's memberships, oldest first. */
  findMembershipsOf(userId: string): Promise<Membership[]> {
    return this.memberships.find({ where: { userId }, order: { createdAt: 'ASC', organizationId: 'ASC' } });
  }
}
