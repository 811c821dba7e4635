import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, In, Repository } from 'typeorm';
import { batchedById } from '../database/batch-loader';
import { idListCondition, placeholders, RowReader, rowReader } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import {
  MEMBER_ACCESS_VIEW,
  MemberAccessColumns,
  MembershipAccess,
  toMembershipAccess,
} from '../identity/member-access';
import { ApiKey } from './api-key.entity';
import { ApiKeyRow, COLUMNS, KeyPage, KeyPageQuery, keyListSql, ListRow, OwnerIds, toApiKey, toPage } from './key-rows';

export type { KeyPage, KeyPageQuery, OwnerIds };

/** What the hot paths read of a key and its owner's membership: no label, no Date (docs/adr/0027-the-house.md). */
export interface KeyCredential {
  key: Pick<ApiKey, 'id' | 'organizationId' | 'userId' | 'secretHash' | 'status' | 'scopes'> & {
    /** expires_at in milliseconds since the epoch; null: never. */
    expiresAtMs: number | null;
  };
  ownerAccess: MembershipAccess | null;
}

type CredentialRow = Pick<ApiKeyRow, 'id' | 'organization_id' | 'user_id' | 'secret_hash' | 'status' | 'scopes'> & {
  expires_at_ms: number | null;
} & MemberAccessColumns;

/** First half of the owner's PostgreSQL advisory-lock key (the second: the owner's ids, hashed). */
const OWNER_LOCK_CLASS = 0x61706b79;

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

/** The key core's queries; hot-path reads batched per event-loop turn (docs/adr/0010-data-access-repositories.md). */
@Injectable()
export class ApiKeysRepository {
  private readonly dataSource: DataSource;
  private readonly credentialById: (id: string) => Promise<CredentialRow | undefined>;
  private readonly rowById: (id: string) => Promise<ApiKeyRow | undefined>;
  private readonly listSql: { active: string; all: string };
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

    // One query (a round trip on PostgreSQL); the expiry in ms, so no Date is made per lookup.
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

    // One owner's keys, one page and their count in one statement, each reading at most the list window
    // (api_keys_owner_active, api_keys_owner_newest; docs/adr/0010-data-access-repositories.md).
    const owner = (condition: string) => (first: number) =>
      `user_id = ${p(first)} AND organization_id = ${p(first + 1)} ${condition}`;
    this.listSql = { active: keyListSql(p, owner("AND status = 'ACTIVE'"), 2), all: keyListSql(p, owner(''), 2) };
    // The cap and the membership checked in the insert itself, under the owner's lock: why, in
    // docs/adr/0027-the-house.md#creation-within-the-cap.
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
    this.ownerLockSql = `SELECT pg_advisory_xact_lock(${OWNER_LOCK_CLASS}, hashtext(${p(1)}::text || '/' || ${p(2)}::text))`;
  }

  /** Stores the key unless its owner has `cap` usable keys besides `replacing`, or is no longer a member. */
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

  /** PostgreSQL: the owner's creations, rotations and removal run one after another (re-entrant within `tx`). */
  async lockOwner(owner: OwnerIds, tx: Transaction): Promise<void> {
    if (this.postgres) await tx.query(this.ownerLockSql, [owner.userId, owner.organizationId]);
  }

  /** A rotation's old key, if still usable: revoked, or expiring at min(its expiry, graceEndsAt); false: unchanged. */
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
}
