import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { toDate } from '../database/columns';
import { EntityRows, RawRow } from '../database/entity-rows';
import { Dialect, join, param, raw, sql, Statement } from '../database/sql';
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

/** What a just-in-time membership did: added it, found one, or found an admin's removal (and added nothing). */
export type JustInTimeJoin = 'added' | 'member' | 'removed';

interface MemberArgs {
  organizationId: string;
  userId: string;
}

/** A member as the members page lists them (docs/api.md#members). */
export interface MemberRow {
  userId: string;
  email: string;
  role: Role;
  joinedAt: Date;
  lastSignedInAt: Date | null;
}

/** First half of the organization's PostgreSQL advisory-lock key while its admins are counted (the second: its id). */
const ADMINS_LOCK_CLASS = 0x61646d6e;

/** The column of each setting an update may change (docs/api.md#organization-settings). */
const SETTING_COLUMNS: { [setting in keyof Required<OrganizationSettings>]: string } = {
  accessTokenLifetime: 'access_token_lifetime',
  maxKeyLifetimeDays: 'max_key_lifetime_days',
  requireKeyAllowlist: 'require_key_allowlist',
};

/** Every query on organizations, users and memberships; the Bearer path's reads have fixed SQL. */
@Injectable()
export class IdentityRepository {
  private readonly db: Dialect;
  private readonly session: Statement<MemberArgs>;
  private readonly access: Statement<MemberArgs>;
  private readonly signOut: Statement<MemberArgs & { at: string }>;
  private readonly organizationById: Statement<{ id: string }>;
  private readonly organizationByName: Statement<{ name: string }>;
  private readonly anyOrganization: Statement<Record<string, never>>;
  private readonly insertOrganization: Statement<{
    id: string;
    name: string;
    accessTokenLifetime: number;
    now: string;
  }>;
  private readonly userByEmail: Statement<{ email: string }>;
  private readonly emails: Statement<{ ids: readonly string[] }>;
  private readonly insertUser: Statement<{ id: string; email: string; now: string }>;
  private readonly membership: Statement<MemberArgs>;
  private readonly membershipsOf: Statement<{ userId: string }>;
  private readonly addMembership: Statement<MemberArgs & { role: Role; now: string }>;
  private readonly setRole: Statement<MemberArgs & { role: Role; now: string }>;
  private readonly deleteMember: Statement<MemberArgs>;
  private readonly removal: Statement<MemberArgs>;
  private readonly recordRemoval: Statement<MemberArgs & { at: string }>;
  private readonly forgetRemoval: Statement<MemberArgs>;
  private readonly adminsLock: Statement<{ organizationId: string }> | null;
  private readonly admins: Statement<{ organizationId: string }>;
  private readonly memberPage: Statement<{ organizationId: string; limit: number; offset: number }>;
  private readonly memberCount: Statement<{ organizationId: string }>;
  private readonly signedIn: Statement<MemberArgs & { at: string }>;

  /** The three tables as their entities describe them: column lists and row mappings. */
  private readonly organizations: EntityRows<Organization>;
  private readonly users: EntityRows<User>;
  private readonly memberships: EntityRows<Membership>;

  constructor(
    @InjectDataSource() private readonly dataSource: DataSource,
    private readonly unitOfWork: UnitOfWork,
  ) {
    const db = Dialect.of(dataSource);
    this.db = db;
    this.organizations = EntityRows.of(dataSource, Organization);
    this.users = EntityRows.of(dataSource, User);
    this.memberships = EntityRows.of(dataSource, Membership);
    const ORGANIZATION_COLUMNS = this.organizations.columns;
    const USER_COLUMNS = this.users.columns;
    const MEMBERSHIP_COLUMNS = this.memberships.columns;
    const member = sql`organization_id = ${param('organizationId')} AND user_id = ${param('userId')}`;
    this.session = db.prepare(sql`SELECT role, created_at, sessions_valid_after FROM memberships WHERE ${member}`);
    this.access = db.prepare(sql`SELECT role, access_token_lifetime FROM ${raw(MEMBER_ACCESS_VIEW)} WHERE ${member}`);
    this.signOut = db.prepare(
      sql`UPDATE memberships SET sessions_valid_after = ${param('at')}, updated_at = ${param('at')} WHERE ${member}`,
    );

    const organizations = sql`SELECT ${raw(ORGANIZATION_COLUMNS)} FROM organizations`;
    this.organizationById = db.prepare(sql`${organizations} WHERE id = ${param('id')}`);
    this.organizationByName = db.prepare(sql`${organizations} WHERE name = ${param('name')}`);
    this.anyOrganization = db.prepare(sql`SELECT 1 AS found FROM organizations LIMIT 1`);
    // ON CONFLICT DO NOTHING: a concurrent insert of the same name (or e-mail, or membership) is not an error.
    this.insertOrganization = db.prepare(sql`INSERT INTO organizations
        (id, name, access_token_lifetime, created_at, updated_at)
      VALUES (${param('id')}, ${param('name')}, ${param('accessTokenLifetime')}, ${param('now')}, ${param('now')})
      ON CONFLICT DO NOTHING`);

    this.userByEmail = db.prepare(sql`SELECT ${raw(USER_COLUMNS)} FROM users WHERE email = ${param('email')}`);
    this.emails = db.prepare(sql`SELECT id, email FROM users WHERE ${db.idIn('id', 'ids')}`);
    this.insertUser = db.prepare(sql`INSERT INTO users (id, email, created_at)
      VALUES (${param('id')}, ${param('email')}, ${param('now')}) ON CONFLICT DO NOTHING`);

    this.membership = db.prepare(sql`SELECT ${raw(MEMBERSHIP_COLUMNS)} FROM memberships WHERE ${member}`);
    this.membershipsOf = db.prepare(sql`SELECT ${raw(MEMBERSHIP_COLUMNS)} FROM memberships
      WHERE user_id = ${param('userId')} ORDER BY created_at ASC, organization_id ASC`);
    const addMember = sql`INSERT INTO memberships (organization_id, user_id, role, created_at, updated_at)
      VALUES (${param('organizationId')}, ${param('userId')}, ${param('role')}, ${param('now')}, ${param('now')})`;
    // Inside a transaction which has just read that there is none: a conflict is an error.
    this.addMembership = db.prepare(addMember);
    this.setRole = db.prepare(
      sql`UPDATE memberships SET role = ${param('role')}, updated_at = ${param('now')} WHERE ${member}`,
    );
    this.deleteMember = db.prepare(sql`DELETE FROM memberships WHERE ${member}`);

    // An admin's removal, remembered until an admin adds the person again (migration 1765820000000).
    this.removal = db.prepare(sql`SELECT removed_at FROM member_removals WHERE ${member}`);
    this.recordRemoval = db.prepare(sql`INSERT INTO member_removals (organization_id, user_id, removed_at)
      VALUES (${param('organizationId')}, ${param('userId')}, ${param('at')})
      ON CONFLICT (organization_id, user_id) DO UPDATE SET removed_at = excluded.removed_at`);
    this.forgetRemoval = db.prepare(sql`DELETE FROM member_removals WHERE ${member}`);

    // The last-admin rule (docs/api.md#members): every change that may leave no admin counts them under this lock.
    const lock = db.transactionLock(ADMINS_LOCK_CLASS, sql`${db.cast(param('organizationId'), 'text')}`);
    this.adminsLock = lock === null ? null : db.prepare(lock);
    this.admins = db.prepare(sql`SELECT count(*) AS admins FROM memberships
      WHERE organization_id = ${param('organizationId')} AND role = 'admin'`);
    this.memberPage = db.prepare(sql`SELECT m.user_id, u.email, m.role, m.created_at, m.last_signed_in_at
      FROM memberships m JOIN users u ON u.id = m.user_id
      WHERE m.organization_id = ${param('organizationId')}
      ORDER BY u.email ASC LIMIT ${param('limit')} OFFSET ${param('offset')}`);
    this.memberCount = db.prepare(
      sql`SELECT count(*) AS members FROM memberships WHERE organization_id = ${param('organizationId')}`,
    );
    this.signedIn = db.prepare(sql`UPDATE memberships SET last_signed_in_at = ${param('at')} WHERE ${member}`);
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
    const args = { organizationId, userId, at: at.toISOString() };
    return (await this.db.affected(this.dataSource.manager, this.signOut, args)) > 0;
  }

  async findAccess(organizationId: string, userId: string): Promise<MembershipAccess | null> {
    const rows = await this.db.rows<MemberAccessColumns, MemberArgs>(this.access, { organizationId, userId });
    return rows[0] === undefined ? null : toMembershipAccess(rows[0]);
  }

  async findOrganizationById(id: string): Promise<Organization | null> {
    const rows = await this.db.rows<RawRow, { id: string }>(this.organizationById, { id });
    return rows[0] === undefined ? null : this.organizations.toEntity(rows[0]);
  }

  async hasOrganizations(): Promise<boolean> {
    return (await this.db.rows(this.anyOrganization, {})).length > 0;
  }

  async findOrganizationByName(name: string): Promise<Organization | null> {
    const rows = await this.db.rows<RawRow, { name: string }>(this.organizationByName, { name });
    return rows[0] === undefined ? null : this.organizations.toEntity(rows[0]);
  }

  /** Adds the organization unless one of that name exists (a concurrent insert is not an error). */
  async insertOrganizationIfMissing(name: string, accessTokenLifetime: number, now: Date): Promise<void> {
    await this.db.run(this.dataSource.manager, this.insertOrganization, {
      id: randomUUID(),
      name,
      accessTokenLifetime,
      now: now.toISOString(),
    });
  }

  /** Sets only the given settings and reads the row back in the same statement; null: no such organization. */
  async updateSettings(
    organizationId: string,
    settings: OrganizationSettings,
    now: Date,
    tx?: Transaction,
  ): Promise<Organization | null> {
    const args: Record<string, unknown> = { organizationId, now: now.toISOString() };
    const changes = [sql`updated_at = ${param('now')}`];
    for (const [setting, column] of Object.entries(SETTING_COLUMNS) as Array<[keyof OrganizationSettings, string]>) {
      const value = settings[setting];
      if (value === undefined) continue;
      args[setting] = typeof value === 'boolean' ? Number(value) : value;
      changes.push(sql`${raw(column)} = ${param(setting)}`);
    }
    // Which settings change decides the text: prepared per call, as an audit page is.
    const statement = this.db.prepare<Record<string, unknown>>(
      this.db.returning(
        sql`UPDATE organizations SET ${join(changes, ', ')} WHERE id = ${param('organizationId')}
          RETURNING ${raw(this.organizations.columns)}`,
        this.organizations.columns,
      ),
    );
    const rows = await this.db.run<RawRow, Record<string, unknown>>(tx ?? this.dataSource.manager, statement, args);
    return rows[0] === undefined ? null : this.organizations.toEntity(rows[0]);
  }

  async findUserByEmail(email: string): Promise<User | null> {
    const rows = await this.db.rows<RawRow, { email: string }>(this.userByEmail, { email });
    return rows[0] === undefined ? null : this.users.toEntity(rows[0]);
  }

  /** The e-mail addresses of these users (one query; an unknown id is left out). */
  async findEmails(ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.rows<{ id: string; email: string }, { ids: readonly string[] }>(this.emails, { ids });
    return new Map(rows.map((row) => [row.id, row.email]));
  }

  /** Adds the user unless one with that e-mail exists (a concurrent insert is not an error). */
  async insertUserIfMissing(email: string, now: Date): Promise<void> {
    await this.db.run(this.dataSource.manager, this.insertUser, { id: randomUUID(), email, now: now.toISOString() });
  }

  /**
   * Sets the role, adding the membership if missing, in one transaction: `tx` when given, else one of its own
   * (through UnitOfWork, like every transaction: on SQLite they must not overlap). Returns what changed.
   */
  async upsertMembershipRole(
    organizationId: string,
    userId: string,
    role: Role,
    now: Date,
    tx?: Transaction,
  ): Promise<RoleChange> {
    const args = { organizationId, userId, role, now: now.toISOString() };
    const upsert = async (manager: Transaction): Promise<RoleChange> => {
      const [existing] = await this.db.run<RawRow, MemberArgs>(manager, this.membership, {
        organizationId,
        userId,
      });
      if (existing === undefined) {
        await this.db.run(manager, this.addMembership, args);
        return 'added';
      }
      if (existing.role === role) return 'unchanged';
      await this.db.run(manager, this.setRole, args);
      return 'changed';
    };
    return tx === undefined ? this.unitOfWork.run(upsert) : upsert(tx);
  }

  /**
   * Removes the membership and remembers the removal (an admin's), inside `tx` when given; false when there was no
   * membership (nothing is written then).
   */
  async deleteMembership(organizationId: string, userId: string, at: Date, tx?: Transaction): Promise<boolean> {
    const remove = async (manager: Transaction): Promise<boolean> => {
      const args = { organizationId, userId };
      if ((await this.db.affected(manager, this.deleteMember, args)) === 0) return false;
      await this.db.run(manager, this.recordRemoval, { ...args, at: at.toISOString() });
      return true;
    };
    return tx === undefined ? this.unitOfWork.run(remove) : remove(tx);
  }

  /** Whether an admin removed the user from the organization (and nobody has added them again since). */
  async isRemoved(organizationId: string, userId: string, tx?: Transaction): Promise<boolean> {
    const rows = await this.db.run(tx ?? this.dataSource.manager, this.removal, { organizationId, userId });
    return rows.length > 0;
  }

  /** Forgets an admin's removal of the user (an admin adds them again), inside `tx`. */
  async deleteRemoval(organizationId: string, userId: string, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.forgetRemoval, { organizationId, userId });
  }

  /**
   * Adds the membership with `role` unless the user has one, or an admin removed them (then nothing is written), in
   * one transaction: `tx`, which the caller audits an addition in.
   */
  async joinJustInTime(
    organizationId: string,
    userId: string,
    role: Role,
    now: Date,
    tx: Transaction,
  ): Promise<JustInTimeJoin> {
    const member = { organizationId, userId };
    if ((await this.db.run(tx, this.removal, member)).length > 0) return 'removed';
    if ((await this.db.run(tx, this.membership, member)).length > 0) return 'member';
    await this.db.run(tx, this.addMembership, { ...member, role, now: now.toISOString() });
    return 'added';
  }

  /**
   * How many admins the organization has, read inside `tx` under a lock on the organization (PostgreSQL; SQLite's
   * writers run one at a time): two admins demoting each other at once cannot both go through.
   */
  async countAdminsLocked(organizationId: string, tx: Transaction): Promise<number> {
    if (this.adminsLock !== null) await this.db.run(tx, this.adminsLock, { organizationId });
    const [row] = await this.db.run<{ admins: number | string }, { organizationId: string }>(tx, this.admins, {
      organizationId,
    });
    return Number(row?.admins ?? 0);
  }

  /** The membership, inside `tx` when given; null when there is none. */
  async findMembership(organizationId: string, userId: string, tx?: Transaction): Promise<Membership | null> {
    const rows = await this.db.run<RawRow, MemberArgs>(tx ?? this.dataSource.manager, this.membership, {
      organizationId,
      userId,
    });
    return rows[0] === undefined ? null : this.memberships.toEntity(rows[0]);
  }

  /** A page of the organization's members by e-mail address, and how many there are. */
  async findMembers(
    organizationId: string,
    limit: number,
    offset: number,
  ): Promise<{ members: MemberRow[]; total: number }> {
    const rows = await this.db.rows<
      {
        user_id: string;
        email: string;
        role: Role;
        created_at: Date | string;
        last_signed_in_at: Date | string | null;
      },
      { organizationId: string; limit: number; offset: number }
    >(this.memberPage, { organizationId, limit, offset });
    const [count] = await this.db.rows<{ members: number | string }, { organizationId: string }>(this.memberCount, {
      organizationId,
    });
    return {
      members: rows.map((row) => ({
        userId: row.user_id,
        email: row.email,
        role: row.role,
        joinedAt: toDate(row.created_at),
        lastSignedInAt: row.last_signed_in_at === null ? null : toDate(row.last_signed_in_at),
      })),
      total: Number(count?.members ?? 0),
    };
  }

  /** Notes the member's console sign-in. */
  async updateLastSignIn(organizationId: string, userId: string, at: Date): Promise<void> {
    await this.db.run(this.dataSource.manager, this.signedIn, { organizationId, userId, at: at.toISOString() });
  }

  /** The user's memberships, oldest first. */
  async findMembershipsOf(userId: string): Promise<Membership[]> {
    const rows = await this.db.rows<RawRow, { userId: string }>(this.membershipsOf, { userId });
    return rows.map(this.memberships.toEntity);
  }
}
