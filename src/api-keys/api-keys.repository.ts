import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { toDate } from '../database/columns';
import { batchedById } from '../database/batch-loader';
import type { RawRow } from '../database/entity-rows';
import { join, param, raw, sql, Sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import {
  MEMBER_ACCESS_VIEW,
  MemberAccessColumns,
  MembershipAccess,
  toMembershipAccess,
} from '../identity/member-access';
import { ApiKey } from './api-key.entity';
import type { KeyRateLimit } from './key-policies';
import type { OwnerIds } from '../credentials/credential-owner';
import { CredentialKinds } from '../credentials/credential-kinds';
import type { CredentialState } from '../credentials/credential-kind';
import { CredentialsRepository, SharedInsertArgs } from '../credentials/credentials.repository';
import { API_KEY_KIND } from './api-key-kind';

/** What the hot paths read of a key and its owner's membership: no label, no Date (docs/adr/0027-the-house.md). */
export interface KeyCredential {
  key: Pick<ApiKey, 'id' | 'organizationId' | 'userId' | 'secretHash' | 'status' | 'scopes' | 'allowedCidrs'> & {
    /** expires_at in milliseconds since the epoch; null: never. */
    expiresAtMs: number | null;
    /** null: no rate limit (docs/api.md#allowlists-and-rate-limits). */
    rateLimit: KeyRateLimit | null;
  };
  ownerAccess: MembershipAccess | null;
}

/** The hot path's projection (its SQL below): the key's columns it needs, the expiry in ms, the owner's membership. */
type CredentialRow = {
  id: string;
  organization_id: string;
  user_id: string;
  secret_hash: string;
  status: ApiKey['status'];
  scopes: number | string;
  expires_at_ms: number | null;
  allowed_cidrs: string | null;
  rate_limit_requests: number | string | null;
  rate_limit_window_seconds: number | string | null;
} & MemberAccessColumns;

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
      allowedCidrs: row.allowed_cidrs,
      rateLimit:
        row.rate_limit_requests === null || row.rate_limit_window_seconds === null
          ? null
          : { requests: Number(row.rate_limit_requests), windowSeconds: Number(row.rate_limit_window_seconds) },
    },
    ownerAccess: toMembershipAccess(row),
  };
}

/** The insert's arguments besides the shared columns (docs/adr/0027-the-house.md#creation-within-the-cap). */
interface OwnInsertArgs {
  secretHash: string;
  allowedCidrs: string | null;
  rateLimitRequests: number | null;
  rateLimitWindowSeconds: number | null;
  excluded: string;
  cap: number;
}

/** What PATCH /v1/user-api-keys/{id} changes: each field absent (unchanged) or its new stored value. */
export interface KeyChanges {
  label?: string;
  allowedCidrs?: string | null;
  rateLimit?: KeyRateLimit | null;
}

/** Arguments of a rotation's change to the old key (`retire`). */
interface RetireArgs extends OwnerIds {
  id: string;
  replacedBy: string;
  at: string;
  graceEndsAt?: string;
}

/**
 * The key's own queries beside the credential core's (CredentialsRepository): creation within the cap, rotation, changes, the
 * hot path's read; hot-path reads batched per event-loop turn (docs/adr/0010-data-access-repositories.md).
 */
@Injectable()
export class ApiKeysRepository extends CredentialsRepository<ApiKey> {
  private readonly credentialById: (id: string) => Promise<CredentialRow | undefined>;
  private readonly insertWithinCap: Statement<SharedInsertArgs & OwnInsertArgs>;
  private readonly retireNow: Statement<RetireArgs>;
  private readonly retireAtGraceEnd: Statement<RetireArgs>;
  private readonly labels: Statement<{ organizationId: string; ids: readonly string[] }>;

  constructor(@InjectDataSource() dataSource: DataSource, kinds: CredentialKinds) {
    super(dataSource, API_KEY_KIND, kinds);
    const db = this.db;

    // One query (a round trip on PostgreSQL); the expiry in ms, so no Date is made per lookup.
    const credential = db.prepare<{ ids: readonly string[] }>(sql`
      SELECT k.id, k.organization_id, k.user_id, k.secret_hash, k.status, k.scopes,
        ${db.epochMs('k.expires_at')} AS expires_at_ms, k.allowed_cidrs, k.rate_limit_requests,
        k.rate_limit_window_seconds, a.role, a.access_token_lifetime
      FROM api_keys k LEFT JOIN ${raw(MEMBER_ACCESS_VIEW)} a ON a.organization_id = k.organization_id AND a.user_id = k.user_id
      WHERE ${db.idIn('k.id', 'ids')}`);
    this.credentialById = batchedById((ids) => db.rows<CredentialRow, { ids: readonly string[] }>(credential, { ids }));

    // The cap and the membership checked in the insert itself, under the owner's lock: why, in
    // docs/adr/0027-the-house.md#creation-within-the-cap.
    const usable = (expiry: Sql): Sql =>
      sql`SELECT COUNT(*) FROM (SELECT 1 FROM api_keys WHERE user_id = ${param('userId')}
          AND organization_id = ${param('organizationId')} AND status = 'ACTIVE' AND ${expiry}
          AND id <> ${param('excluded')} LIMIT ${param('cap')}) u`;
    const value = (name: string, type: string): Sql => db.cast(param(name), type);
    this.insertWithinCap = db.prepare(sql`INSERT INTO api_keys
        (id, organization_id, user_id, label, secret_hash, status, scopes, expires_at, created_at, updated_at,
          allowed_cidrs, rate_limit_requests, rate_limit_window_seconds)
      SELECT ${value('id', 'uuid')}, ${value('organizationId', 'uuid')}, ${value('userId', 'uuid')},
        ${value('label', 'varchar')}, ${value('secretHash', 'varchar')}, 'ACTIVE', ${value('scopes', 'integer')},
        ${value('expiresAt', 'timestamptz')}, ${value('createdAt', 'timestamptz')}, ${value('updatedAt', 'timestamptz')},
        ${value('allowedCidrs', 'text')}, ${value('rateLimitRequests', 'integer')},
        ${value('rateLimitWindowSeconds', 'integer')}
      WHERE (${usable(sql`expires_at IS NULL`)}) + (${usable(sql`expires_at > ${param('createdAt')}`)}) < ${param('cap')}
        AND EXISTS (SELECT 1 FROM ${raw(MEMBER_ACCESS_VIEW)}
          WHERE organization_id = ${param('organizationId')} AND user_id = ${param('userId')})
      RETURNING id`);

    // A rotation's old key while still usable: revoked now, or expiring at the earlier of its expiry and the grace's end.
    const owned = sql`id = ${param('id')} AND user_id = ${param('userId')} AND organization_id = ${param('organizationId')}
      AND status = 'ACTIVE'`;
    const retire = (change: Sql): Statement<RetireArgs> =>
      db.prepare(
        db.returning(
          sql`UPDATE api_keys SET ${change}, updated_at = ${param('at')}, replaced_by = ${param('replacedBy')}
            WHERE ${owned} AND (expires_at IS NULL OR expires_at > ${param('at')}) RETURNING expires_at`,
          'expires_at',
        ),
      );
    this.retireNow = retire(sql`status = 'REVOKED', revoked_at = ${param('at')}`);
    this.retireAtGraceEnd = retire(
      sql`expires_at = CASE WHEN expires_at IS NOT NULL AND expires_at < ${param('graceEndsAt')} THEN expires_at
        ELSE ${param('graceEndsAt')} END`,
    );
    this.labels = db.prepare(sql`SELECT id, label FROM api_keys
      WHERE organization_id = ${param('organizationId')} AND ${db.idIn('id', 'ids')}`);
  }

  /** Stores the key unless its owner has `cap` usable keys besides `replacing`, or is no longer a member. */
  async insertWithinActiveCap(key: ApiKey, cap: number, tx: Transaction, replacing?: string): Promise<boolean> {
    const own = {
      secretHash: key.secretHash,
      allowedCidrs: key.allowedCidrs,
      rateLimitRequests: key.rateLimitRequests,
      rateLimitWindowSeconds: key.rateLimitWindowSeconds,
      // The new key's own id stands for "no key replaced": it is not stored yet, so it excludes nothing.
      excluded: replacing ?? key.id,
      cap,
    };
    return this.insertUnderLock(this.insertWithinCap, key, own, tx);
  }

  /**
   * A rotation's old key, if still usable: revoked, or expiring at min(its expiry, graceEndsAt). Returns its expiry as
   * the change left it (RETURNING: a rotation that committed meanwhile may have shortened it); undefined: unchanged.
   */
  async retire(
    owner: OwnerIds,
    id: string,
    replacedBy: string,
    at: Date,
    graceEndsAt: Date | null,
    tx: Transaction,
  ): Promise<Pick<ApiKey, 'expiresAt'> | undefined> {
    const args = { id, userId: owner.userId, organizationId: owner.organizationId, replacedBy, at: at.toISOString() };
    const rows = await this.db.run<{ expires_at: Date | string | null }, RetireArgs>(
      tx,
      graceEndsAt === null ? this.retireNow : this.retireAtGraceEnd,
      graceEndsAt === null ? args : { ...args, graceEndsAt: graceEndsAt.toISOString() },
    );
    const row = rows[0];
    if (row === undefined) return undefined;
    return { expiresAt: row.expires_at === null ? null : toDate(row.expires_at) };
  }

  /** The key with this id and its owner's membership (batched; undefined for an unknown id). */
  async findCredential(id: string): Promise<KeyCredential | undefined> {
    const row = await this.credentialById(id);
    return row === undefined ? undefined : toCredential(row);
  }

  async read(id: string): Promise<CredentialState | undefined> {
    const found = await this.findCredential(id);
    if (found === undefined) return undefined;
    const { key } = found;
    return {
      userId: key.userId,
      organizationId: key.organizationId,
      status: key.status,
      scopes: key.scopes,
      expiresAtMs: key.expiresAtMs,
      allowedCidrs: key.allowedCidrs,
      rateLimit: key.rateLimit,
      ownerAccess: found.ownerAccess,
    };
  }

  /**
   * Sets the given fields of the owner's key while it is usable (ACTIVE, not expired at `at`) and reads it back in the
   * same statement; undefined when there is no such key. Which fields change decides the text: prepared per call.
   */
  async update(
    owner: OwnerIds,
    id: string,
    changes: KeyChanges,
    at: Date,
    tx: Transaction,
  ): Promise<ApiKey | undefined> {
    const args: Record<string, unknown> = {
      id,
      userId: owner.userId,
      organizationId: owner.organizationId,
      at: at.toISOString(),
    };
    const set = [sql`updated_at = ${param('at')}`];
    if (changes.label !== undefined) {
      args.label = changes.label;
      set.push(sql`label = ${param('label')}`);
    }
    if (changes.allowedCidrs !== undefined) {
      args.allowedCidrs = changes.allowedCidrs;
      set.push(sql`allowed_cidrs = ${param('allowedCidrs')}`);
    }
    if (changes.rateLimit !== undefined) {
      args.rateLimitRequests = changes.rateLimit?.requests ?? null;
      args.rateLimitWindowSeconds = changes.rateLimit?.windowSeconds ?? null;
      set.push(sql`rate_limit_requests = ${param('rateLimitRequests')}`);
      set.push(sql`rate_limit_window_seconds = ${param('rateLimitWindowSeconds')}`);
    }
    const { columns } = this.rows;
    const statement = this.db.prepare<Record<string, unknown>>(
      this.db.returning(
        sql`UPDATE api_keys SET ${join(set, ', ')}
          WHERE id = ${param('id')} AND user_id = ${param('userId')} AND organization_id = ${param('organizationId')}
            AND status = 'ACTIVE' AND (expires_at IS NULL OR expires_at > ${param('at')})
          RETURNING ${raw(columns)}`,
        columns,
      ),
    );
    const rows = await this.db.run<RawRow, Record<string, unknown>>(tx, statement, args);
    return rows[0] === undefined ? undefined : this.rows.toEntity(rows[0]);
  }

  /** The labels of these keys of the organization (the audit log shows them beside the key ids). */
  async findLabels(organizationId: string, ids: readonly string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await this.db.rows<{ id: string; label: string }, { organizationId: string; ids: readonly string[] }>(
      this.labels,
      { organizationId, ids },
    );
    return new Map(rows.map((row) => [row.id, row.label]));
  }
}
