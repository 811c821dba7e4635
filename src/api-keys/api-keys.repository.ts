import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { In, Repository } from 'typeorm';
import { batchedById } from '../database/batch-loader';
import { Dialect, param, raw, sql, Sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import {
  MEMBER_ACCESS_VIEW,
  MemberAccessColumns,
  MembershipAccess,
  toMembershipAccess,
} from '../identity/member-access';
import { ApiKey } from './api-key.entity';
import {
  ApiKeyRow,
  COLUMNS,
  KeyPage,
  KeyPageQuery,
  keyListSql,
  ListRow,
  OwnerIds,
  page,
  PageArgs,
  toApiKey,
  toPage,
} from './key-rows';

type OwnerListArgs = OwnerIds & PageArgs;

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

/** Arguments of the insert within the cap (docs/adr/0027-the-house.md#creation-within-the-cap). */
interface InsertArgs {
  id: string;
  organizationId: string;
  userId: string;
  label: string;
  secretHash: string;
  scopes: number;
  expiresAt: string | null;
  createdAt: string;
  updatedAt: string;
  excluded: string;
  cap: number;
}

/** The key core's queries; hot-path reads batched per event-loop turn (docs/adr/0010-data-access-repositories.md). */
@Injectable()
export class ApiKeysRepository {
  private readonly db: Dialect;
  private readonly credentialById: (id: string) => Promise<CredentialRow | undefined>;
  private readonly rowById: (id: string) => Promise<ApiKeyRow | undefined>;
  private readonly list: { active: Statement<OwnerListArgs>; all: Statement<OwnerListArgs> };
  private readonly insertWithinCap: Statement<InsertArgs>;
  private readonly ownerLock: Statement<OwnerIds> | null;

  constructor(@InjectRepository(ApiKey) private readonly apiKeys: Repository<ApiKey>) {
    const db = Dialect.of(apiKeys.manager.connection);
    this.db = db;

    // One query (a round trip on PostgreSQL); the expiry in ms, so no Date is made per lookup.
    const credential = db.prepare<{ ids: readonly string[] }>(sql`
      SELECT k.id, k.organization_id, k.user_id, k.secret_hash, k.status, k.scopes,
        ${db.epochMs('k.expires_at')} AS expires_at_ms, a.role, a.access_token_lifetime
      FROM api_keys k LEFT JOIN ${raw(MEMBER_ACCESS_VIEW)} a ON a.organization_id = k.organization_id AND a.user_id = k.user_id
      WHERE ${db.idIn('k.id', 'ids')}`);
    this.credentialById = batchedById((ids) => db.rows<CredentialRow, { ids: readonly string[] }>(credential, { ids }));

    const keys = db.prepare<{ ids: readonly string[] }>(
      sql`SELECT ${raw(COLUMNS)} FROM api_keys WHERE ${db.idIn('id', 'ids')}`,
    );
    this.rowById = batchedById((ids) => db.rows<ApiKeyRow, { ids: readonly string[] }>(keys, { ids }));

    // One owner's keys, one page and their count in one statement, each reading at most the list window
    // (api_keys_owner_active, api_keys_owner_newest; docs/adr/0010-data-access-repositories.md).
    const owner = sql`user_id = ${param('userId')} AND organization_id = ${param('organizationId')}`;
    this.list = {
      active: db.prepare(keyListSql(sql`${owner} AND status = 'ACTIVE'`)),
      all: db.prepare(keyListSql(owner)),
    };
    // The cap and the membership checked in the insert itself, under the owner's lock: why, in
    // docs/adr/0027-the-house.md#creation-within-the-cap.
    const usable = (expiry: Sql): Sql =>
      sql`SELECT COUNT(*) FROM (SELECT 1 FROM api_keys WHERE user_id = ${param('userId')}
          AND organization_id = ${param('organizationId')} AND status = 'ACTIVE' AND ${expiry}
          AND id <> ${param('excluded')} LIMIT ${param('cap')}) u`;
    const value = (name: string, type: string): Sql => db.cast(param(name), type);
    this.insertWithinCap = db.prepare(sql`INSERT INTO api_keys
        (id, organization_id, user_id, label, secret_hash, status, scopes, expires_at, created_at, updated_at)
      SELECT ${value('id', 'uuid')}, ${value('organizationId', 'uuid')}, ${value('userId', 'uuid')},
        ${value('label', 'varchar')}, ${value('secretHash', 'varchar')}, 'ACTIVE', ${value('scopes', 'integer')},
        ${value('expiresAt', 'timestamptz')}, ${value('createdAt', 'timestamptz')}, ${value('updatedAt', 'timestamptz')}
      WHERE (${usable(sql`expires_at IS NULL`)}) + (${usable(sql`expires_at > ${param('createdAt')}`)}) < ${param('cap')}
        AND EXISTS (SELECT 1 FROM ${raw(MEMBER_ACCESS_VIEW)}
          WHERE organization_id = ${param('organizationId')} AND user_id = ${param('userId')})
      RETURNING id`);
    const lock = db.transactionLock(
      OWNER_LOCK_CLASS,
      sql`${db.cast(param('userId'), 'text')} || '/' || ${db.cast(param('organizationId'), 'text')}`,
    );
    this.ownerLock = lock === null ? null : db.prepare(lock);
  }

  /** Stores the key unless its owner has `cap` usable keys besides `replacing`, or is no longer a member. */
  async insertWithinActiveCap(key: ApiKey, cap: number, tx: Transaction, replacing?: string): Promise<boolean> {
    await this.lockOwner(key, tx);
    const rows = await this.db.run(tx, this.insertWithinCap, {
      id: key.id,
      organizationId: key.organizationId,
      userId: key.userId,
      label: key.label,
      secretHash: key.secretHash,
      scopes: key.scopes,
      expiresAt: key.expiresAt === null ? null : key.expiresAt.toISOString(),
      createdAt: key.createdAt.toISOString(),
      updatedAt: key.updatedAt.toISOString(),
      // The new key's own id stands for "no key replaced": it is not stored yet, so it excludes nothing.
      excluded: replacing ?? key.id,
      cap,
    });
    return rows.length === 1;
  }

  /** The owner's creations, rotations and removal run one after another (re-entrant within `tx`). */
  async lockOwner(owner: OwnerIds, tx: Transaction): Promise<void> {
    if (this.ownerLock !== null) {
      await this.db.run(tx, this.ownerLock, { userId: owner.userId, organizationId: owner.organizationId });
    }
  }

  /**
   * A rotation's old key, if still usable: revoked, or expiring at min(its expiry, graceEndsAt). Returns its expiry as
   * changed (read in `tx`: a rotation that committed meanwhile may have shortened it); undefined: unchanged.
   */
  async retire(
    owner: OwnerIds,
    id: string,
    replacedBy: string,
    at: Date,
    graceEndsAt: Date | null,
    tx: Transaction,
  ): Promise<Pick<ApiKey, 'expiresAt'> | undefined> {
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
    if ((result.affected ?? 0) === 0) return undefined;
    return tx.getRepository(ApiKey).findOneOrFail({ select: { id: true, expiresAt: true }, where: { id } });
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
    const statement = query.includeRevoked ? this.list.all : this.list.active;
    return toPage(await this.db.rows<ListRow, OwnerListArgs>(statement, { userId, organizationId, ...page(query) }));
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
