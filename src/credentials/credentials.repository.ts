import type { DataSource } from 'typeorm';
import { LIST_WINDOW } from '../common/pagination';
import { batchedById } from '../database/batch-loader';
import { EntityRows, RawRow } from '../database/entity-rows';
import { Dialect, param, raw, sql, Sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import type { Credential, CredentialBase } from './credential.entity';
import type { CredentialKind, CredentialState, CredentialUse, KindStore, StoredKind } from './credential-kind';
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

/** A page's window: `limit` rows from `offset`, ACTIVE ones only unless `includeRevoked`. */
export interface PageWindow {
  limit: number;
  offset: number;
  includeRevoked: boolean;
}

/** One page of credentials, newest first, and how many the list window holds (at most LIST_WINDOW). */
export interface CredentialPage<T> {
  items: T[];
  totalCount: number;
}

type PageArgs = { limit: number; offset: number };
type OwnerListArgs = OwnerIds & PageArgs;
type OrganizationListArgs = { organizationId: string } & PageArgs;
type RevokeArgs = { organizationId: string; id: string; at: string; userId?: string };

/** A row of a list page: a credential's columns and the count (only the count, the rest null, when the page is empty). */
type ListRow = RawRow & { id: string | null; total_count: number | string };

/** The columns every kind's insert binds, as its statement names them. */
export interface SharedInsertArgs {
  id: string;
  organizationId: string;
  userId: string;
  label: string;
  scopes: number;
  expiresAt: string | null;
  createdAt: string;
  updatedAt: string;
}

function sharedInsertArgs(credential: Credential): SharedInsertArgs {
  return {
    id: credential.id,
    organizationId: credential.organizationId,
    userId: credential.userId,
    label: credential.label,
    scopes: credential.scopes,
    expiresAt: credential.expiresAt === null ? null : credential.expiresAt.toISOString(),
    createdAt: credential.createdAt.toISOString(),
    updatedAt: credential.updatedAt.toISOString(),
  };
}

/**
 * The queries every kind with the shared columns (Credential) shares, on its own table
 * (docs/adr/0052-one-credential-core.md): read by id (batched per event-loop turn), the owner's and the organization's
 * lists, the revocations; the owner's lock and the usage fields are CredentialStore's. A kind's repository extends it
 * with its own (creation, the token paths' reads).
 */
export abstract class CredentialsRepository<T extends Credential> extends CredentialStore<T> {
  declare readonly kind: CredentialKind<T>;
  private readonly rowById: (id: string) => Promise<RawRow | undefined>;
  private readonly ownerList: { active: Statement<OwnerListArgs>; all: Statement<OwnerListArgs> };
  private readonly organizationList: {
    active: Statement<OrganizationListArgs>;
    all: Statement<OrganizationListArgs>;
  };
  private readonly revokeOwned: Statement<RevokeArgs>;
  private readonly revokeInOrganizationStatement: Statement<RevokeArgs>;
  private readonly revokeAll: Statement<OwnerIds & { at: string }>;

  protected constructor(dataSource: DataSource, kind: CredentialKind<T>, kinds: CredentialKinds) {
    super(dataSource, kind, kinds);
    const db = this.db;
    const { table, columns } = this.rows;

    const byIds = db.prepare<{ ids: readonly string[] }>(
      sql`SELECT ${raw(columns)} FROM ${raw(table)} WHERE ${db.idIn('id', 'ids')}`,
    );
    this.rowById = batchedById((ids) => db.rows<RawRow & { id: string }, { ids: readonly string[] }>(byIds, { ids }));

    // One owner's page and their count in one statement, each reading at most the list window (the owner indexes).
    const owner = sql`user_id = ${param('userId')} AND organization_id = ${param('organizationId')}`;
    this.ownerList = {
      active: db.prepare(this.listSql(sql`${owner} AND status = 'ACTIVE'`)),
      all: db.prepare(this.listSql(owner)),
    };
    // The organization's, in list order from its indexes, the count's window ordered as the page: at most the window
    // however large the organization (docs/adr/0010-data-access-repositories.md).
    const organization = sql`organization_id = ${param('organizationId')}`;
    const newest = 'ORDER BY created_at DESC, id DESC';
    this.organizationList = {
      active: db.prepare(
        this.listSql(
          sql`${organization} AND status = 'ACTIVE'`,
          db.table(table, kind.organizationIndexes.active),
          newest,
        ),
      ),
      all: db.prepare(this.listSql(organization, db.table(table, kind.organizationIndexes.all), newest)),
    };

    const revoke = (scope: Sql): Sql => sql`UPDATE ${raw(table)}
      SET status = 'REVOKED', revoked_at = ${param('at')}, updated_at = ${param('at')}
      WHERE ${scope} AND status = 'ACTIVE'`;
    this.revokeOwned = db.prepare(revoke(sql`id = ${param('id')} AND ${owner}`));
    this.revokeInOrganizationStatement = db.prepare(revoke(sql`id = ${param('id')} AND ${organization}`));
    this.revokeAll = db.prepare(db.returning(sql`${revoke(owner)} RETURNING id`, 'id'));
  }

  /**
   * One page of the credentials `scope` selects and their count in the list window, in one statement
   * (docs/adr/0010-data-access-repositories.md); `from` may name an index, `windowOrder` orders the window as the page.
   */
  protected listSql(scope: Sql, from: Sql = raw(this.rows.table), windowOrder = ''): Sql {
    const window = sql`SELECT 1 FROM ${from} WHERE ${scope} ${raw(windowOrder)} LIMIT ${raw(String(LIST_WINDOW))}`;
    const rows = sql`SELECT ${raw(this.rows.columns)} FROM ${from} WHERE ${scope}
      ORDER BY created_at DESC, id DESC LIMIT ${param('limit')} OFFSET ${param('offset')}`;
    return sql`SELECT c.total_count, p.* FROM (SELECT COUNT(*) AS total_count FROM (${window}) w) c
      LEFT JOIN (${rows}) p ON 1 = 1
      ORDER BY p.created_at DESC, p.id DESC`;
  }

  /** The credential with this id, whoever owns it (batched; the caller checks the owner). */
  async findById(id: string): Promise<T | undefined> {
    const row = await this.rowById(id);
    return row === undefined ? undefined : this.rows.toEntity(row);
  }

  /** A page of the owner's credentials, newest first (created_at, then id, descending), and their count. */
  async findPageByOwner(owner: OwnerIds, window: PageWindow): Promise<CredentialPage<T>> {
    const statement = window.includeRevoked ? this.ownerList.all : this.ownerList.active;
    const args = {
      userId: owner.userId,
      organizationId: owner.organizationId,
      limit: window.limit,
      offset: window.offset,
    };
    return this.toPage(await this.db.rows<ListRow, OwnerListArgs>(statement, args));
  }

  /** A page of the organization's credentials, every owner's, newest first, and their count in the window. */
  async findPageByOrganization(organizationId: string, window: PageWindow): Promise<CredentialPage<T>> {
    const statement = window.includeRevoked ? this.organizationList.all : this.organizationList.active;
    const args = { organizationId, limit: window.limit, offset: window.offset };
    return this.toPage(await this.db.rows<ListRow, OrganizationListArgs>(statement, args));
  }

  /** Marks the owner's ACTIVE credential REVOKED; false when there was no such credential (or it was revoked). */
  async revoke(owner: OwnerIds, id: string, at: Date, tx: Transaction): Promise<boolean> {
    const args = { id, userId: owner.userId, organizationId: owner.organizationId, at: at.toISOString() };
    return (await this.db.affected(tx, this.revokeOwned, args)) > 0;
  }

  /** Marks the organization's ACTIVE credential REVOKED, whoever owns it; false when there was no such credential. */
  async revokeInOrganization(organizationId: string, id: string, at: Date, tx: Transaction): Promise<boolean> {
    const args = { organizationId, id, at: at.toISOString() };
    return (await this.db.affected(tx, this.revokeInOrganizationStatement, args)) > 0;
  }

  /**
   * Marks every ACTIVE credential of the owner REVOKED (expired ones too) in one statement inside `tx`, which holds the
   * owner's lock (lockOwner): the ids it revoked.
   */
  async revokeAllOf(owner: OwnerIds, at: Date, tx: Transaction): Promise<string[]> {
    const args = { at: at.toISOString(), userId: owner.userId, organizationId: owner.organizationId };
    const rows = await this.db.run<{ id: string }, OwnerIds & { at: string }>(tx, this.revokeAll, args);
    return rows.map((row) => row.id);
  }

  /**
   * Runs a kind's insert (one that returns a row only when the owner may have one more: its cap and membership checked
   * in the statement) under the owner's lock, binding the credential's shared columns and `args`; whether it stored it.
   */
  protected async insertUnderLock<A>(
    statement: Statement<SharedInsertArgs & A>,
    credential: T,
    args: A,
    tx: Transaction,
  ): Promise<boolean> {
    await this.lockOwner(credential, tx);
    const rows = await this.db.run(tx, statement, { ...sharedInsertArgs(credential), ...args });
    return rows.length === 1;
  }

  /** A list page's rows as credentials and their count: a page past the end is the count's row alone. */
  private toPage(rows: ListRow[]): CredentialPage<T> {
    return {
      items: rows.filter((row) => row.id !== null).map((row) => this.rows.toEntity(row)),
      totalCount: Number(rows[0]?.total_count ?? 0),
    };
  }
}
