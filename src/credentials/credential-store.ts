import type { DataSource } from 'typeorm';
import { EntityRows } from '../database/entity-rows';
import { Dialect, raw, sql, param, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import type { CredentialBase } from './credential.entity';
import type { CredentialState, CredentialUse, KindStore, StoredKind } from './credential-kind';
import type { CredentialKinds } from './credential-kinds';
import type { OwnerIds } from './credential-owner';

type UseRecord = { id: string; at: string; ip?: string | null; user_agent?: string | null };

/** Rows one UPDATE of the usage fields writes at most. */
const LAST_USED_CHUNK = 500;

/**
 * What every kind's repository is to the core (docs/adr/0052-one-credential-core.md): added to CredentialKinds when it
 * is made, so that a member's removal revokes the kind and a token's liveness reads it; its table read through its
 * entity (`rows`); the owner's lock and the usage fields, the same SQL for every kind. A kind with every shared column
 * extends CredentialsRepository instead, which adds the lists and revocations.
 */
export abstract class CredentialStore<T extends CredentialBase> implements KindStore {
  protected readonly db: Dialect;
  /** The kind's table, as its entity describes it (docs/adr/0051-tables-described-once.md). */
  protected readonly rows: EntityRows<T>;
  private readonly ownerLock: Statement<OwnerIds> | null;
  private readonly lastUsed: Statement<{ uses: UseRecord[] }>;

  /** The credential with this id for a token's liveness, with its owner's membership: the kind's own batched query. */
  abstract read(id: string): Promise<CredentialState | undefined>;

  /**
   * Marks every active credential of the owner revoked (expired ones too) in one statement inside `tx`, which holds the
   * owner's lock (lockOwner): the ids it revoked.
   */
  abstract revokeAllOf(owner: OwnerIds, at: Date, tx: Transaction): Promise<string[]>;

  protected constructor(
    protected readonly dataSource: DataSource,
    readonly kind: StoredKind<T>,
    kinds: CredentialKinds,
  ) {
    kinds.add(this);
    const db = Dialect.of(dataSource);
    this.db = db;
    this.rows = EntityRows.of(dataSource, kind.entity);
    const { table } = this.rows;

    const lock = db.transactionLock(
      kind.ownerLockClass,
      sql`${db.cast(param('userId'), 'text')} || '/' || ${db.cast(param('organizationId'), 'text')}`,
    );
    this.ownerLock = lock === null ? null : db.prepare(lock);

    // The uses as one JSON array (timestamps as ISO 8601 text, which SQLite compares as text). Written together,
    // and only by a later use.
    const useColumns: Array<[string, string]> = [
      ['id', 'uuid'],
      ['at', 'timestamptz'],
    ];
    let set = 'last_used_at = u.at';
    if (kind.keepsIp) {
      useColumns.push(['ip', 'varchar']);
      set += ', last_used_ip = u.ip';
    }
    if (kind.keepsUserAgent) {
      useColumns.push(['user_agent', 'varchar']);
      set += ', last_used_user_agent = u.user_agent';
    }
    this.lastUsed = db.prepare(sql`UPDATE ${raw(table)} SET ${raw(set)}
      FROM ${db.jsonRecords('uses', 'u', useColumns)}
      WHERE ${raw(table)}.id = u.id AND (${raw(table)}.last_used_at IS NULL OR ${raw(table)}.last_used_at < u.at)`);
  }

  /**
   * The owner's creations and a removal's revocation run one after another (PostgreSQL; SQLite has one writer): a
   * creation that saw the membership commits before the removal revokes, or sees it gone. Re-entrant within `tx`.
   */
  async lockOwner(owner: OwnerIds, tx: Transaction): Promise<void> {
    if (this.ownerLock !== null) {
      await this.db.run(tx, this.ownerLock, { userId: owner.userId, organizationId: owner.organizationId });
    }
  }

  /** Sets each credential's usage fields to its use unless the stored one is as late or later. */
  async recordLastUsed(uses: ReadonlyArray<readonly [id: string, use: CredentialUse]>): Promise<void> {
    for (let start = 0; start < uses.length; start += LAST_USED_CHUNK) {
      const records = uses.slice(start, start + LAST_USED_CHUNK).map(([id, use]): UseRecord => {
        const record: UseRecord = { id, at: use.at.toISOString() };
        if (this.kind.keepsIp) record.ip = use.ip;
        if (this.kind.keepsUserAgent) record.user_agent = use.userAgent;
        return record;
      });
      await this.db.run(this.dataSource.manager, this.lastUsed, { uses: records });
    }
  }
}
