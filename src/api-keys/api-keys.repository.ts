import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, In, Repository } from 'typeorm';
import { LIST_WINDOW } from '../common/pagination';
import { batchedById } from '../database/batch-loader';
import { toDate } from '../database/columns';
import { idListCondition, placeholders, RowReader, rowReader } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import {
  MEMBER_ACCESS_VIEW,
  MemberAccessColumns,
  MembershipAccess,
  toMembershipAccess,
} from '../identity/member-access';
import { ApiKey, ApiKeyStatus } from './api-key.entity';
import type { KeyUse } from './key-use';

/** Whose keys: every query on a user's keys is scoped by both. */
export interface OwnerIds {
  userId: string;
  organizationId: string;
}

/**
 * What the hot paths (the exchange, every access-token request) read of a key, with its owner's
 * membership in the key's organization (null when no longer a member): no label and no Date (on
 * PostgreSQL every timestamp column would be parsed into one). The expiry comes as epoch
 * milliseconds, computed by the database, and the scopes as their bit mask.
 */
export interface KeyCredential {
  key: Pick<ApiKey, 'id' | 'organizationId' | 'userId' | 'secretHash' | 'status' | 'scopes'> & {
    /** expires_at in milliseconds since the epoch; null: never. */
    expiresAtMs: number | null;
  };
  ownerAccess: MembershipAccess | null;
}

export interface KeyPageQuery {
  limit: number;
  offset: number;
  includeRevoked: boolean;
}

/** One page of keys, newest first, and how many the list window holds (at most LIST_WINDOW). */
export interface KeyPage {
  keys: ApiKey[];
  totalCount: number;
}

/** A row of api_keys as a raw query returns it. */
interface ApiKeyRow {
  id: string;
  organization_id: string;
  user_id: string;
  label: string;
  secret_hash: string;
  status: ApiKeyStatus;
  scopes: number | string;
  expires_at: Date | string | null;
  created_at: Date | string;
  updated_at: Date | string;
  last_used_at: Date | string | null;
  last_used_ip: string | null;
  last_used_user_agent: string | null;
  revoked_at: Date | string | null;
  replaced_by: string | null;
}

type CredentialRow = Pick<ApiKeyRow, 'id' | 'organization_id' | 'user_id' | 'secret_hash' | 'status' | 'scopes'> & {
  expires_at_ms: number | null;
} & MemberAccessColumns;

/** A row of a list page: a key and the owner's count, or only the count when the page is empty. */
type ListRow = (ApiKeyRow | { [column in keyof ApiKeyRow]: null }) & { total_count: number | string };

const COLUMNS = `id, organization_id, user_id, label, secret_hash, status, scopes, expires_at, created_at, updated_at,
  last_used_at, last_used_ip, last_used_user_agent, revoked_at, replaced_by`;

/** Keys one UPDATE of the usage fields writes at most. */
const LAST_USED_CHUNK = 500;

/**
 * First half of the PostgreSQL advisory-lock key that serialises key creations, rotations and the
 * owner's removal from the organization per owner (any constant other than the migration lock's);
 * the second half is the owner's ids, hashed. Owners whose hashes collide merely wait for each other.
 */
const OWNER_LOCK_CLASS = 0x61706b79;

/** The one mapper from an api_keys row to the entity. */
function toApiKey(row: ApiKeyRow): ApiKey {
  return Object.assign(new ApiKey(), {
    id: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    label: row.label,
    secretHash: row.secret_hash,
    status: row.status,
    scopes: Number(row.scopes),
    expiresAt: row.expires_at === null ? null : toDate(row.expires_at),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
    lastUsedAt: row.last_used_at === null ? null : toDate(row.last_used_at),
    lastUsedIp: row.last_used_ip,
    lastUsedUserAgent: row.last_used_user_agent,
    revokedAt: row.revoked_at === null ? null : toDate(row.revoked_at),
    replacedBy: row.replaced_by,
  });
}

function toCredential(row: CredentialRow): KeyCredential {
  return {
    key: {
      id: row.id,
      organizationId: row.organization_id,
      userId: row.user_id,
      secretHash: row.secret_hash,
      status: row.status,
      scopes: Number(row.scopes),
      expiresAtMs: row.expires_at_ms,
    },
    ownerAccess: toMembershipAccess(row),
  };
}

/**
 * Every query on api_keys. The hot-path reads by id are batched per event-loop turn
 * (batchedById; docs/adr/0010-data-access-repositories.md) and their SQL is fixed at construction.
 */
@Injectable()
export class ApiKeysRepository {
  private readonly dataSource: DataSource;
  private readonly credentialById: (id: string) => Promise<CredentialRow | undefined>;
  private readonly rowById: (id: string) => Promise<ApiKeyRow | undefined>;
  private readonly listSql: { active: string; all: string };
  private readonly organizationListSql: { active: string; all: string };
  private readonly lastUsedSql: string;
  private readonly revokeAllSql: string;
  private readonly insertWithinCapSql: string;
  private readonly ownerLockSql: string;
  private readonly postgres: boolean;
  private readonly read: RowReader;

  constructor(@InjectRepository(ApiKey) private readonly apiKeys: Repository<ApiKey>) {
    const dataSource = apiKeys.manager.connection;
    this.dataSource = dataSource;
    this.postgres = dataSource.options.type === 'postgres';
    this.read = rowReader(dataSource);
    const p = placeholders(dataSource);

    // The key and its owner's membership in one query: on PostgreSQL every query is a round trip.
    // The expiry as a number of milliseconds, so that no Date is made per lookup (exact: timestamps
    // are stored with millisecond precision).
    const credentialIds = idListCondition(dataSource, 'k.id', 1);
    const expiresAtMs = this.postgres
      ? 'round(extract(epoch FROM k.expires_at) * 1000)::float8'
      : "CAST(round(unixepoch(k.expires_at, 'subsec') * 1000) AS INTEGER)";
    const credentialSql = `SELECT k.id, k.organization_id, k.user_id, k.secret_hash, k.status, k.scopes,
        ${expiresAtMs} AS expires_at_ms, a.role, a.access_token_lifetime
      FROM api_keys k LEFT JOIN ${MEMBER_ACCESS_VIEW} a ON a.organization_id = k.organization_id AND a.user_id = k.user_id
      WHERE ${credentialIds.sql}`;
    this.credentialById = batchedById((ids) => this.rows<CredentialRow>(credentialSql, [credentialIds.bind(ids)]));

    const keyIds = idListCondition(dataSource, 'id', 1);
    const keySql = `SELECT ${COLUMNS} FROM api_keys WHERE ${keyIds.sql}`;
    this.rowById = batchedById((ids) => this.rows<ApiKeyRow>(keySql, [keyIds.bind(ids)]));

    // One owner's keys, one page and their count, in one statement. Both read at most the list
    // window (LIST_WINDOW rows, docs/api.md#conventions), however many keys the owner has: the count
    // stops at the window, and the page starts inside it (the query DTO refuses a later page). The
    // active keys come from api_keys_owner_active (a partial index: revoked keys are not in it), all
    // keys from api_keys_owner_newest, in list order either way, so neither count nor page reads a
    // row outside the window. One statement rather than two: on PostgreSQL each round trip cost the
    // event loop ~100 µs on the 2-core machine. The count is joined to the page, so a page past the
    // end still returns it.
    // `scope` is the condition on the keys listed, with `width` placeholders from `first` on.
    const list = (scope: (first: number) => string, width: number, from = 'api_keys', windowOrder = ''): string => {
      const window = `SELECT 1 FROM ${from} WHERE ${scope(1)} ${windowOrder} LIMIT ${LIST_WINDOW}`;
      const page = `SELECT ${COLUMNS} FROM ${from} WHERE ${scope(1 + width)}
        ORDER BY created_at DESC, id DESC LIMIT ${p(1 + 2 * width)} OFFSET ${p(2 + 2 * width)}`;
      return `SELECT c.total_count, p.* FROM (SELECT COUNT(*) AS total_count FROM (${window}) w) c
        LEFT JOIN (${page}) p ON 1 = 1
        ORDER BY p.created_at DESC, p.id DESC`;
    };
    const owner = (condition: string) => (first: number) =>
      `user_id = ${p(first)} AND organization_id = ${p(first + 1)} ${condition}`;
    this.listSql = { active: list(owner("AND status = 'ACTIVE'"), 2), all: list(owner(''), 2) };
    // Every key of an organization (GET /v1/organization/api-keys), the same way: the active ones from
    // api_keys_org_active, all from api_keys_org_newest (migration 1764810000000), in list order,
    // so that an organization with any number of keys costs at most the window. SQLite, which has no
    // statistics, is told which index; either one serves the order, and another (api_keys_owner_*
    // starts with user_id) none. The count's window is ordered as the page is (the newest
    // LIST_WINDOW keys, the same ones): one organization may hold most of the table, and for an
    // unordered LIMIT PostgreSQL then estimates that a sequential scan finds the window's rows at
    // once, which it does not when they sit at the end of the table (measured: with the
    // organization's 200,000 keys among 400,000 it chose that scan); ordered, the index is the
    // plan whatever the statistics say.
    const organization = (condition: string) => (first: number) => `organization_id = ${p(first)} ${condition}`;
    const table = (index: string): string => (this.postgres ? 'api_keys' : `api_keys INDEXED BY ${index}`);
    const newest = 'ORDER BY created_at DESC, id DESC';
    this.organizationListSql = {
      active: list(organization("AND status = 'ACTIVE'"), 1, table('api_keys_org_active'), newest),
      all: list(organization(''), 1, table('api_keys_org_newest'), newest),
    };

    // A new key, only while the owner is a member of the organization and has fewer usable keys
    // (ACTIVE and not expired) than the cap, not counting the key a rotation replaces: the checks and
    // the insert are one statement. The membership is checked under the owner's lock, which a
    // member's removal takes too (revokeAllOf): a creation that waited for a removal finds no
    // membership, so a removed member is never left with a key that being added back would revive. The
    // count reads api_keys_owner_usable in two ranges, the keys without an expiry and those expiring
    // after now, each stopping at the cap: expired keys the owner has not revoked are never read, so
    // the count costs at most twice the cap however many there are. On PostgreSQL the caller's
    // transaction first takes the owner's advisory lock (ownerLockSql), so that of two concurrent
    // creations the second counts after the first has committed (READ COMMITTED: each statement
    // sees what was committed before it started). SQLite runs one writer at a time.
    const typed = (n: number, type: string): string => (this.postgres ? `${p(n)}::${type}` : p(n));
    // Placeholders are numbered in the order they appear (SQLite's are positional).
    const usable = (first: number, expiry: (n: number) => string, next: number): string =>
      `SELECT COUNT(*) FROM (SELECT 1 FROM api_keys WHERE user_id = ${p(first)} AND organization_id = ${p(first + 1)}
          AND status = 'ACTIVE' AND ${expiry(first + 2)} AND id <> ${p(next)} LIMIT ${p(next + 1)}) u`;
    this.insertWithinCapSql = `INSERT INTO api_keys
        (id, organization_id, user_id, label, secret_hash, status, scopes, expires_at, created_at, updated_at)
      SELECT ${typed(1, 'uuid')}, ${typed(2, 'uuid')}, ${typed(3, 'uuid')}, ${typed(4, 'varchar')}, ${typed(5, 'varchar')},
        'ACTIVE', ${typed(6, 'integer')}, ${typed(7, 'timestamptz')}, ${typed(8, 'timestamptz')}, ${typed(9, 'timestamptz')}
      WHERE (${usable(10, () => 'expires_at IS NULL', 12)})
        + (${usable(14, (n) => `expires_at > ${p(n)}`, 17)}) < ${p(19)}
        AND EXISTS (SELECT 1 FROM ${MEMBER_ACCESS_VIEW} WHERE organization_id = ${p(20)} AND user_id = ${p(21)})
      RETURNING id`;
    // A member's removal: every ACTIVE key of the owner, from api_keys_owner_active. PostgreSQL
    // answers an UPDATE ... RETURNING through TypeORM as [rows, count]; as a CTE it is a SELECT,
    // answered with its rows, as SQLite answers its UPDATE ... RETURNING.
    const revokeAll = `UPDATE api_keys SET status = 'REVOKED', revoked_at = ${p(1)}, updated_at = ${p(2)}
      WHERE user_id = ${p(3)} AND organization_id = ${p(4)} AND status = 'ACTIVE' RETURNING id`;
    this.revokeAllSql = this.postgres ? `WITH revoked AS (${revokeAll}) SELECT id FROM revoked` : revokeAll;
    this.ownerLockSql = `SELECT pg_advisory_xact_lock(${OWNER_LOCK_CLASS}, hashtext(${p(1)}::text || '/' || ${p(2)}::text))`;

    // The uses as arrays, one per field (PostgreSQL), or one JSON array of [id, time, address, user
    // agent] (SQLite, whose timestamps are ISO 8601 text and compare as text). The three usage fields
    // are written together, and only by a later use: they never move backwards, and never mix two uses.
    this.lastUsedSql = this.postgres
      ? `UPDATE api_keys AS k SET last_used_at = u.at, last_used_ip = u.ip, last_used_user_agent = u.user_agent
         FROM unnest(${p(1)}::uuid[], ${p(2)}::timestamptz[], ${p(3)}::varchar[], ${p(4)}::varchar[])
           AS u(id, at, ip, user_agent)
         WHERE k.id = u.id AND (k.last_used_at IS NULL OR k.last_used_at < u.at)`
      : `UPDATE api_keys SET last_used_at = u.at, last_used_ip = u.ip, last_used_user_agent = u.user_agent
         FROM (SELECT value ->> 0 AS id, value ->> 1 AS at, value ->> 2 AS ip, value ->> 3 AS user_agent
               FROM json_each(${p(1)})) AS u
         WHERE api_keys.id = u.id AND (api_keys.last_used_at IS NULL OR api_keys.last_used_at < u.at)`;
  }

  /**
   * Stores the new ACTIVE key unless its owner already has `cap` usable keys (ACTIVE and not expired
   * at the key's creation) besides `replacing` (the key a rotation replaces), or is no longer a
   * member of the key's organization; false when refused.
   * Inside `tx` (which it locks for the owner on PostgreSQL), so that the caller's other writes
   * commit with it.
   */
  async insertWithinActiveCap(key: ApiKey, cap: number, tx: Transaction, replacing?: string): Promise<boolean> {
    await this.lockOwner(key, tx);
    const now = key.createdAt.toISOString();
    // The new key's own id stands for "no key replaced": it is not stored yet, so it excludes nothing.
    const excluded = replacing ?? key.id;
    const rows = await tx.query<Array<{ id: string }>>(this.insertWithinCapSql, [
      key.id,
      key.organizationId,
      key.userId,
      key.label,
      key.secretHash,
      key.scopes,
      key.expiresAt === null ? null : key.expiresAt.toISOString(),
      now,
      key.updatedAt.toISOString(),
      key.userId,
      key.organizationId,
      excluded,
      cap,
      key.userId,
      key.organizationId,
      now,
      excluded,
      cap,
      cap,
      key.organizationId,
      key.userId,
    ]);
    return rows.length === 1;
  }

  /**
   * On PostgreSQL, the owner's advisory lock for the rest of `tx`: the owner's key creations,
   * rotations and removal from the organization run one after another (it may be taken again in the
   * same transaction).
   */
  async lockOwner(owner: OwnerIds, tx: Transaction): Promise<void> {
    if (this.postgres) await tx.query(this.ownerLockSql, [owner.userId, owner.organizationId]);
  }

  /**
   * The old key of a rotation, if it is still usable at `at` (ACTIVE, not expired): revoked at once
   * (`graceEndsAt` null), or left to expire at min(its expires_at, graceEndsAt); either way marked as
   * replaced by `replacedBy`. False when the key is not the owner's or no longer usable: then nothing was changed.
   */
  async retire(
    owner: OwnerIds,
    id: string,
    replacedBy: string,
    at: Date,
    graceEndsAt: Date | null,
    tx: Transaction,
  ): Promise<boolean> {
    const update = tx.getRepository(ApiKey).createQueryBuilder().update(ApiKey);
    const changed =
      graceEndsAt === null
        ? update.set({ status: 'REVOKED', revokedAt: at, updatedAt: at, replacedBy })
        : update.set({
            expiresAt: () =>
              'CASE WHEN expires_at IS NOT NULL AND expires_at < :graceEndsAt THEN expires_at ELSE :graceEndsAt END',
            updatedAt: at,
            replacedBy,
          });
    const result = await changed
      .where(
        "id = :id AND user_id = :userId AND organization_id = :organizationId AND status = 'ACTIVE' AND (expires_at IS NULL OR expires_at > :at)",
        { id, userId: owner.userId, organizationId: owner.organizationId, at: at.toISOString() },
      )
      .setParameter('graceEndsAt', graceEndsAt?.toISOString() ?? null)
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /** The key with this id and its owner's membership (batched; undefined for an unknown id). */
  async findCredential(id: string): Promise<KeyCredential | undefined> {
    const row = await this.credentialById(id);
    return row === undefined ? undefined : toCredential(row);
  }

  /** The key with this id, whoever owns it (batched; the caller checks the owner). */
  async findById(id: string): Promise<ApiKey | undefined> {
    const row = await this.rowById(id);
    return row === undefined ? undefined : toApiKey(row);
  }

  /** A page of the owner's keys, newest first (created_at, then id, descending), and their count in the list window. */
  async findPageByOwner(owner: OwnerIds, query: KeyPageQuery): Promise<KeyPage> {
    const { userId, organizationId } = owner;
    const rows = await this.rows<ListRow>(query.includeRevoked ? this.listSql.all : this.listSql.active, [
      userId,
      organizationId,
      userId,
      organizationId,
      query.limit,
      query.offset,
    ]);
    return toPage(rows);
  }

  /**
   * A page of the organization's keys, every owner's, newest first (created_at, then id,
   * descending), and their count in the list window.
   */
  async findPageByOrganization(organizationId: string, query: KeyPageQuery): Promise<KeyPage> {
    const sql = query.includeRevoked ? this.organizationListSql.all : this.organizationListSql.active;
    return toPage(await this.rows<ListRow>(sql, [organizationId, organizationId, query.limit, query.offset]));
  }

  /** Marks the owner's ACTIVE key REVOKED; false when there was no such key (or it was revoked). */
  async revoke(owner: OwnerIds, id: string, at: Date, tx?: Transaction): Promise<boolean> {
    const result = await (tx?.getRepository(ApiKey) ?? this.apiKeys)
      .createQueryBuilder()
      .update(ApiKey)
      .set({ status: 'REVOKED', revokedAt: at, updatedAt: at })
      .where("id = :id AND user_id = :userId AND organization_id = :organizationId AND status = 'ACTIVE'", {
        id,
        userId: owner.userId,
        organizationId: owner.organizationId,
      })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /**
   * Marks the organization's ACTIVE key REVOKED, whoever owns it; false when there was no such key
   * in the organization (or it was revoked).
   */
  async revokeInOrganization(organizationId: string, id: string, at: Date, tx: Transaction): Promise<boolean> {
    const result = await tx
      .getRepository(ApiKey)
      .createQueryBuilder()
      .update(ApiKey)
      .set({ status: 'REVOKED', revokedAt: at, updatedAt: at })
      .where("id = :id AND organization_id = :organizationId AND status = 'ACTIVE'", { id, organizationId })
      .execute();
    return (result.affected ?? 0) > 0;
  }

  /**
   * Marks every ACTIVE key of the owner REVOKED (expired ones too), in one statement inside `tx`,
   * after taking the owner's lock (lockOwner): returns the ids of the keys it revoked.
   */
  async revokeAllOf(owner: OwnerIds, at: Date, tx: Transaction): Promise<string[]> {
    await this.lockOwner(owner, tx);
    const when = at.toISOString();
    const rows = await tx.query<Array<Pick<ApiKeyRow, 'id'>>>(this.revokeAllSql, [
      when,
      when,
      owner.userId,
      owner.organizationId,
    ]);
    return rows.map((row) => row.id);
  }

  /**
   * Sets the usage fields of each key to its use unless the stored one is as late or later
   * (LAST_USED_CHUNK keys a statement).
   */
  async recordLastUsed(uses: ReadonlyArray<readonly [id: string, use: KeyUse]>): Promise<void> {
    for (let start = 0; start < uses.length; start += LAST_USED_CHUNK) {
      const chunk = uses.slice(start, start + LAST_USED_CHUNK);
      await this.dataSource.query(
        this.lastUsedSql,
        this.postgres
          ? [
              chunk.map(([id]) => id),
              chunk.map(([, use]) => use.at.toISOString()),
              chunk.map(([, use]) => use.ip),
              chunk.map(([, use]) => use.userAgent),
            ]
          : [JSON.stringify(chunk.map(([id, use]) => [id, use.at.toISOString(), use.ip, use.userAgent]))],
      );
    }
  }

  private rows<Row>(sql: string, parameters: unknown[]): Promise<Row[]> {
    return this.read<Row>(sql, parameters);
  }

  /** The labels of these keys of the organization (the audit log shows them beside the key ids). */
  async findLabels(organizationId: string, ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const keys = await this.apiKeys.find({
      select: { id: true, label: true },
      where: { organizationId, id: In([...ids]) },
    });
    return new Map(keys.map((key) => [key.id, key.label]));
  }

  /**
   * The keys with these ids, whoever owns them, with what a report of exposed keys compares
   * (docs/api.md#post-v1api-keysexposed): one query for the whole report, on the primary key.
   */
  async findSecretsByIds(ids: readonly string[]): Promise<ExposableKey[]> {
    if (ids.length === 0) return [];
    const { findSql, bindIds } = this.exposedSql();
    const rows = await this.rows<Pick<ApiKeyRow, 'id' | 'organization_id' | 'secret_hash' | 'status'>>(findSql, [
      bindIds(ids),
    ]);
    return rows.map((row) => ({
      id: row.id,
      organizationId: row.organization_id,
      secretHash: row.secret_hash,
      status: row.status,
    }));
  }

  /**
   * Marks those of these keys that are still ACTIVE REVOKED, in one statement inside `tx`, and
   * returns the ones it changed: a key revoked meanwhile (by its owner, or by a concurrent report)
   * is not among them, so that each revocation is recorded once.
   */
  async revokeExposed(
    ids: readonly string[],
    at: Date,
    tx: Transaction,
  ): Promise<Array<Pick<ExposableKey, 'id' | 'organizationId'>>> {
    const { revokeSql, bindIds } = this.exposedSql();
    const when = at.toISOString();
    const rows = await tx.query<Array<Pick<ApiKeyRow, 'id' | 'organization_id'>>>(revokeSql, [
      when,
      when,
      bindIds(ids),
    ]);
    return rows.map((row) => ({ id: row.id, organizationId: row.organization_id }));
  }

  private exposedStatements?: ExposedKeyStatements;

  /** The two statements of a report of exposed keys, written once (on first use). */
  private exposedSql(): ExposedKeyStatements {
    if (this.exposedStatements !== undefined) return this.exposedStatements;
    const p = placeholders(this.dataSource);
    const findIds = idListCondition(this.dataSource, 'id', 1);
    const revokeIds = idListCondition(this.dataSource, 'id', 3);
    // PostgreSQL answers an UPDATE ... RETURNING through TypeORM as [rows, count]; as a CTE it is a
    // SELECT, answered with its rows, as SQLite answers its UPDATE ... RETURNING.
    const update = `UPDATE api_keys SET status = 'REVOKED', revoked_at = ${p(1)}, updated_at = ${p(2)}
      WHERE ${revokeIds.sql} AND status = 'ACTIVE' RETURNING id, organization_id`;
    this.exposedStatements = {
      findSql: `SELECT id, organization_id, secret_hash, status FROM api_keys WHERE ${findIds.sql}`,
      revokeSql: this.postgres ? `WITH revoked AS (${update}) SELECT id, organization_id FROM revoked` : update,
      // The same list parameter either way (a uuid[] or a JSON array).
      bindIds: (ids) => findIds.bind(ids),
    };
    return this.exposedStatements;
  }
}

/** A list page's rows as keys and their count: a page past the end is the count's row alone (no key columns). */
function toPage(rows: ListRow[]): KeyPage {
  return {
    keys: rows.filter((row): row is ApiKeyRow & ListRow => row.id !== null).map(toApiKey),
    totalCount: Number(rows[0]?.total_count ?? 0),
  };
}

interface ExposedKeyStatements {
  findSql: string;
  revokeSql: string;
  bindIds(ids: readonly string[]): unknown;
}

/** What a report of exposed keys reads of a key: never its label or owner's details. */
export interface ExposableKey {
  id: string;
  organizationId: string;
  secretHash: string;
  status: ApiKeyStatus;
}
