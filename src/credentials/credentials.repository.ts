import type { DataSource } from 'typeorm';
import { LIST_WINDOW } from '../common/pagination';
import { batchedById } from '../database/batch-loader';
import { toDate } from '../database/columns';
import { Dialect, param, raw, sql, Sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import type { Credential } from './credential.entity';
import type { CredentialKind, CredentialRow, CredentialState, CredentialUse } from './credential-kind';
import type { CredentialKinds } from './credential-kinds';
import type { OwnerIds } from './credential-owner';

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
type UseRecord = { id: string; at: string; ip: string | null; user_agent?: string | null };

/** Rows one UPDATE of the usage fields writes at most. */
const LAST_USED_CHUNK = 500;

/** A row of a list page: a credential and the count, or only the count when the page is empty. */
type ListRow<R> = (R | { [column in keyof R]: null }) & { total_count: number | string };

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

/** The fields of Credential from a row of any kind. */
export function credentialFields(row: CredentialRow): Credential {
  return {
    id: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    label: row.label,
    status: row.status,
    scopes: Number(row.scopes),
    expiresAt: row.expires_at === null ? null : toDate(row.expires_at),
    createdAt: toDate(row.created_at),
    updatedAt: toDate(row.updated_at),
    lastUsedAt: row.last_used_at === null ? null : toDate(row.last_used_at),
    lastUsedIp: row.last_used_ip,
    revokedAt: row.revoked_at === null ? null : toDate(row.revoked_at),
  };
}

/**
 * The queries every kind of credential shares, on its own table (docs/adr/0052-one-credential-core.md): read by id
 * (batched per event-loop turn), the owner's and the organization's lists, the revocations, the owner's lock, the
 * usage fields. A kind's repository extends it with its own (creation, the token paths' reads).
 */
export abstract class CredentialsRepository<T extends Credential, R extends CredentialRow = CredentialRow> {
  protected readonly db: Dialect;
  private readonly rowById: (id: string) => Promise<R | undefined>;
  private readonly ownerList: { active: Statement<OwnerListArgs>; all: Statement<OwnerListArgs> };
  private readonly organizationList: {
    active: Statement<OrganizationListArgs>;
    all: Statement<OrganizationListArgs>;
  };
  private readonly revokeOwned: Statement<RevokeArgs>;
  private readonly revokeInOrganizationStatement: Statement<RevokeArgs>;
  private readonly revokeAll: Statement<OwnerIds & { at: string }>;
  private readonly ownerLock: Statement<OwnerIds> | null;
  private readonly lastUsed: Statement<{ uses: UseRecord[] }>;

  /** The credential with this id for a token's liveness, with its owner's membership: the kind's own batched query. */
  abstract read(id: string): Promise<CredentialState | undefined>;

  protected constructor(
    protected readonly dataSource: DataSource,
    readonly kind: CredentialKind<T, R>,
    kinds: CredentialKinds,
  ) {
    kinds.add(this);
    const db = Dialect.of(dataSource);
    this.db = db;
    const { table } = kind;

    const byIds = db.prepare<{ ids: readonly string[] }>(
      sql`SELECT ${raw(kind.columns)} FROM ${raw(table)} WHERE ${db.idIn('id', 'ids')}`,
    );
    this.rowById = batchedById((ids) => db.rows<R, { ids: readonly string[] }>(byIds, { ids }));

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
      ['ip', 'varchar'],
    ];
    if (kind.keepsUserAgent) useColumns.push(['user_agent', 'varchar']);
    this.lastUsed = db.prepare(sql`UPDATE ${raw(table)}
      SET last_used_at = u.at, last_used_ip = u.ip${raw(kind.keepsUserAgent ? ', last_used_user_agent = u.user_agent' : '')}
      FROM ${db.jsonRecords('uses', 'u', useColumns)}
      WHERE ${raw(table)}.id = u.id AND (${raw(table)}.last_used_at IS NULL OR ${raw(table)}.last_used_at < u.at)`);
  }

  /**
   * One page of the credentials `scope` selects and their count in the list window, in one statement
   * (docs/adr/0010-data-access-repositories.md); `from` may name an index, `windowOrder` orders the window as the page.
   */
  protected listSql(scope: Sql, from: Sql = raw(this.kind.table), windowOrder = ''): Sql {
    const window = sql`SELECT 1 FROM ${from} WHERE ${scope} ${raw(windowOrder)} LIMIT ${raw(String(LIST_WINDOW))}`;
    const rows = sql`SELECT ${raw(this.kind.columns)} FROM ${from} WHERE ${scope}
      ORDER BY created_at DESC, id DESC LIMIT ${param('limit')} OFFSET ${param('offset')}`;
    return sql`SELECT c.total_count, p.* FROM (SELECT COUNT(*) AS total_count FROM (${window}) w) c
      LEFT JOIN (${rows}) p ON 1 = 1
      ORDER BY p.created_at DESC, p.id DESC`;
  }

  /** The credential with this id, whoever owns it (batched; the caller checks the owner). */
  async findById(id: string): Promise<T | undefined> {
    const row = await this.rowById(id);
    return row === undefined ? undefined : this.kind.toEntity(row);
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
    return this.toPage(await this.db.rows<ListRow<R>, OwnerListArgs>(statement, args));
  }

  /** A page of the organization's credentials, every owner's, newest first, and their count in the window. */
  async findPageByOrganization(organizationId: string, window: PageWindow): Promise<CredentialPage<T>> {
    const statement = window.includeRevoked ? this.organizationList.all : this.organizationList.active;
    const args = { organizationId, limit: window.limit, offset: window.offset };
    return this.toPage(await this.db.rows<ListRow<R>, OrganizationListArgs>(statement, args));
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
        const record: UseRecord = { id, at: use.at.toISOString(), ip: use.ip };
        if (this.kind.keepsUserAgent) record.user_agent = use.userAgent;
        return record;
      });
      await this.db.run(this.dataSource.manager, this.lastUsed, { uses: records });
    }
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
  private toPage(rows: Array<ListRow<R>>): CredentialPage<T> {
    return {
      items: rows.filter((row): row is R & ListRow<R> => row.id !== null).map((row) => this.kind.toEntity(row)),
      totalCount: Number(rows[0]?.total_count ?? 0),
    };
  }
}
