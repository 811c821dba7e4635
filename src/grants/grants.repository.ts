import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { batchedById } from '../database/batch-loader';
import { toDate } from '../database/columns';
import type { RawRow } from '../database/entity-rows';
import { Param, param, raw, sql, Sql, Statement } from '../database/sql';
import type { DirectTransaction, Transaction } from '../database/unit-of-work';
import { credentialState, CredentialState, StoredKind } from '../credentials/credential-kind';
import { CredentialKinds } from '../credentials/credential-kinds';
import type { OwnerIds } from '../credentials/credential-owner';
import { CredentialStore } from '../credentials/credentials.repository';
import {
  MEMBER_ACCESS_VIEW,
  MemberAccessColumns,
  MembershipAccess,
  toMembershipAccess,
} from '../identity/member-access';
import { GrantStatus, OAuthGrant } from './grant.entity';

/** A person's consent to a client for a resource server (docs/mcp.md#grants), as oauth_grants holds it. */
export type Grant = OAuthGrant;

/** What a code was bound to when it was issued. */
export interface CodeBinding {
  grantId: string;
  clientId: string;
  redirectUri: string;
  codeChallenge: string;
  resource: string;
  scope: string;
}

/** Why a code or refresh token did nothing: unknown, expired, or used already. */
export type SpentReason = 'unknown' | 'expired' | 'used';

/** The grant as a kind of credential (docs/adr/0052-one-credential-core.md#a-new-kind): its usage is last_used_at alone. */
export const GRANT_KIND: StoredKind<OAuthGrant> = {
  name: 'grant',
  revokedAction: 'grant.revoked',
  entity: OAuthGrant,
  // "grnt"
  ownerLockClass: 0x67726e74,
  keepsIp: false,
  keepsUserAgent: false,
};

/** The token path's projection: whose grant, its status, its person's membership. */
type CredentialRow = {
  id: string;
  organization_id: string;
  user_id: string;
  status: GrantStatus;
} & MemberAccessColumns;

type RevokeArgs = OwnerIds & { at: string; id?: string };

/** An active grant whose person is a member, as a token request issues under it. */
export interface LiveGrant extends OwnerIds {
  clientId: string;
  resource: string;
  access: MembershipAccess;
}

/**
 * A registered public client a redemption checks in its own statement (the token endpoint's client authentication of
 * a client without a secret): it exists, has no secret, and is an organization's or a dynamic one used (or
 * registered) after `usedAfter`.
 */
export interface PublicClientCondition {
  id: string;
  usedAfter: Date;
}

/** What one redemption statement found: the code's binding (or the refresh token's grant and scope), and its grant if live. */
export interface Redeemed<B> {
  redeemed: B;
  live: LiveGrant | null;
  /** Whether the statement itself began the code's refresh chain (PostgreSQL's batch statement). */
  chained: boolean;
}

/** A redeemed refresh token: its grant and the scope it carried. */
export interface RefreshBinding {
  grantId: string;
  scope: string;
}

/** The live grant's columns a redemption returns (PostgreSQL's batch: joined; SQLite: read from one JSON array). */
type LiveColumns = MemberAccessColumns & {
  organization_id: string | null;
  user_id: string | null;
  grant_client_id: string | null;
  grant_resource: string | null;
};

const CODE_COLUMNS = 'grant_id, client_id, redirect_uri, code_challenge, resource, scope';
type CodeRow = {
  grant_id: string;
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  resource: string;
  scope: string;
};
const REFRESH_COLUMNS = 'grant_id, scope';
type RefreshRow = { grant_id: string; scope: string };
type RedeemArgs = { hash: string; at: string; chain?: string; next?: string; client?: string; usedAfter?: string };

/** The refresh chain a code's redemption begins, and what the request presented for the binding. */
export interface FirstChain {
  id: string;
  tokenHash: string;
  clientId: string | undefined;
  redirectUri: string | undefined;
  /** The S256 challenge of the presented verifier (null when malformed or missing). */
  challenge: string | null;
  resource: string | undefined;
}

/**
 * Every query on oauth_grants, oauth_codes and oauth_refresh_chains. A kind of the credential core (CredentialStore):
 * a member's removal revokes the person's grants (revokeAllOf) and a grant's access token is live by `read`.
 */
@Injectable()
export class GrantsRepository extends CredentialStore<OAuthGrant> {
  /** SQLite's (PostgreSQL redeems a turn at once: `redeemAtOnce`). */
  private readonly codeRedemption: RedeemStatements | null;
  private readonly refreshRedemption: RedeemStatements | null;
  private readonly spentCode: Statement<{ hash: string }>;
  private readonly refreshChain: Statement<{ chain: string }>;
  private readonly codesAtOnce: Statement<{ items: object[]; at: string }> | null;
  private readonly refreshesAtOnce: Statement<{ items: object[]; at: string }> | null;
  private readonly insertChain: Statement<Record<string, string>>;
  private readonly credentialById: (id: string) => Promise<CredentialRow | undefined>;
  private readonly byId: Statement<{ id: string }>;
  private readonly ownerGrants: Statement<OwnerIds>;
  private readonly organizationGrants: Statement<{ organizationId: string }>;
  private readonly activeFor: Statement<OwnerIds & { clientId: string; resource: string }>;
  private readonly insertGrant: Statement<Record<string, string>>;
  private readonly revokeOne: Statement<RevokeArgs>;
  private readonly revokeAll: Statement<RevokeArgs>;
  private readonly deleteTokens: Statement<{ ids: readonly string[] }>;

  constructor(@InjectDataSource() dataSource: DataSource, kinds: CredentialKinds) {
    super(dataSource, GRANT_KIND, kinds);
    const db = this.db;
    const { columns } = this.rows;
    const member = (join: string) => sql`${raw(join)} ${raw(MEMBER_ACCESS_VIEW)} a
      ON a.organization_id = g.organization_id AND a.user_id = g.user_id`;
    // Every request with a grant's access token: the grant and its person's membership by primary key, one query
    // batched per event-loop turn as every kind's (CredentialKinds).
    const credentials = db.prepare<{ ids: readonly string[] }>(sql`SELECT g.id, g.organization_id, g.user_id, g.status,
        a.role, a.access_token_lifetime
      FROM oauth_grants g ${member('LEFT JOIN')} WHERE ${db.idIn('g.id', 'ids')}`);
    this.credentialById = batchedById((ids) =>
      db.rows<CredentialRow, { ids: readonly string[] }>(credentials, { ids }),
    );
    this.byId = db.prepare(sql`SELECT ${raw(columns)} FROM oauth_grants WHERE id = ${param('id')}`);
    const owner = sql`organization_id = ${param('organizationId')} AND user_id = ${param('userId')}`;
    this.ownerGrants = db.prepare(sql`SELECT ${raw(columns)} FROM oauth_grants WHERE ${owner}
      ORDER BY created_at DESC, id DESC`);
    this.organizationGrants = db.prepare(sql`SELECT ${raw(columns)} FROM oauth_grants
      WHERE organization_id = ${param('organizationId')} ORDER BY created_at DESC, id DESC`);
    this.activeFor = db.prepare(sql`SELECT ${raw(columns)} FROM oauth_grants
      WHERE ${owner} AND client_id = ${param('clientId')} AND resource = ${param('resource')} AND status = 'active'
      ORDER BY created_at DESC, id DESC`);
    // Only while the person is a member: checked in the insert, under the owner's lock (GrantsService.allow), as a key's
    // creation (docs/adr/0027-the-house.md#creation-within-the-cap).
    const value = (name: string, type: string): Sql => db.cast(param(name), type);
    this.insertGrant = db.prepare(sql`INSERT INTO oauth_grants
        (id, organization_id, user_id, client_id, client_name, resource, scope, status, created_at)
      SELECT ${value('id', 'uuid')}, ${value('organizationId', 'uuid')}, ${value('userId', 'uuid')},
        ${value('clientId', 'varchar')}, ${value('clientName', 'varchar')}, ${value('resource', 'varchar')},
        ${value('scope', 'text')}, 'active', ${value('createdAt', 'timestamptz')}
      WHERE EXISTS (SELECT 1 FROM ${raw(MEMBER_ACCESS_VIEW)}
        WHERE organization_id = ${param('organizationId')} AND user_id = ${param('userId')})
      RETURNING id`);
    const revoke = (scope: Sql) =>
      db.prepare<RevokeArgs>(
        db.returning(
          sql`UPDATE oauth_grants SET status = 'revoked', revoked_at = ${param('at')}
            WHERE ${owner} AND status = 'active'${scope} RETURNING id`,
          'id',
        ),
      );
    this.revokeOne = revoke(sql` AND id = ${param('id')}`);
    this.revokeAll = revoke(sql``);
    this.deleteTokens = db.prepare(sql`DELETE FROM oauth_refresh_chains WHERE ${db.idIn('grant_id', 'ids')}`);
    // SQLite: a code's or a refresh token's redemption, one statement (docs/adr/0061-code-and-refresh-cost.md): a code
    // marked used, a chain's current token replaced by the next, once (the UPDATE decides), returning what it was
    // bound to and its grant if active and its person a member; with a public client's check when the request named
    // a registered client without a secret.
    const sqlite = db.kind === 'sqlite';
    this.codeRedemption = sqlite
      ? this.redeemStatements(
          'oauth_codes',
          sql`used_at = ${param('at')} WHERE code_hash = ${param('hash')} AND used_at IS NULL
            AND expires_at > ${param('at')}`,
          CODE_COLUMNS,
        )
      : null;
    this.refreshRedemption = sqlite
      ? this.redeemStatements(
          'oauth_refresh_chains',
          sql`token_hash = ${param('next')}, refreshed_at = ${param('at')}
            WHERE id = ${param('chain')} AND token_hash = ${param('hash')}`,
          REFRESH_COLUMNS,
        )
      : null;
    // Why a code or refresh token redeemed nothing (the rare path): unknown, expired, or used already (and whose).
    this.spentCode = db.prepare(
      sql`SELECT used_at, expires_at, grant_id FROM oauth_codes WHERE code_hash = ${param('hash')}`,
    );
    this.refreshChain = db.prepare(sql`SELECT grant_id FROM oauth_refresh_chains WHERE id = ${param('chain')}`);
    // PostgreSQL: a turn's redemptions of one kind in one statement, one round trip and one commit
    // (docs/adr/0061-code-and-refresh-cost.md); SQLite shares a transaction instead.
    this.codesAtOnce = db.kind === 'postgres' ? this.atOnce('codes') : null;
    this.refreshesAtOnce = db.kind === 'postgres' ? this.atOnce('refreshes') : null;
    this.insertChain = db.prepare(sql`INSERT INTO oauth_refresh_chains
      (id, grant_id, token_hash, scope, created_at, refreshed_at)
      VALUES (${param('chain')}, ${param('grantId')}, ${param('tokenHash')}, ${param('scope')}, ${param('at')}, NULL)`);
  }

  /**
   * SQLite's UPDATE ... RETURNING the row's `columns` and its grant when live (SQLite joins nothing to a RETURNING: one
   * scalar subquery as a JSON array). Two variants: without and with the public client's condition.
   */
  private redeemStatements(table: string, change: Sql, columns: string): RedeemStatements {
    const db = this.db;
    const statement = (clientCheck: boolean): Statement<RedeemArgs> => {
      const client = clientCheck ? sql` AND ${publicClient(param('client'), param('usedAfter'))}` : sql``;
      const update = sql`UPDATE ${raw(table)} SET ${change}${client}`;
      return db.prepare(sql`${update} RETURNING ${raw(columns)},
        (SELECT json_array(g.organization_id, g.user_id, g.client_id, g.resource, a.role, a.access_token_lifetime)
          FROM ${GRANT_AND_MEMBER} WHERE g.id = ${raw(table)}.grant_id AND g.status = 'active') AS live`);
    };
    return { plain: statement(false), withClient: statement(true) };
  }

  /**
   * PostgreSQL's statement for a batch of code or refresh redemptions, its items a JSON argument: each row returned
   * names its item (`ord`); a code's first chain is inserted when its binding holds and its grant is live.
   */
  private atOnce(kind: 'codes' | 'refreshes'): Statement<{ items: object[]; at: string }> {
    const db = this.db;
    const items = db.jsonRecords('items', 'v', [
      ['ord', 'int'],
      ['hash', 'varchar'],
      ['client', 'uuid'],
      ['used_after', 'timestamptz'],
      ['chain', 'uuid'],
      ['next_hash', 'varchar'],
      ['token_hash', 'varchar'],
      ['client_id', 'varchar'],
      ['redirect_uri', 'varchar'],
      ['challenge', 'varchar'],
      ['resource', 'varchar'],
    ]);
    const client = sql`(v.client IS NULL OR ${publicClient(raw('v.client'), raw('v.used_after'))})`;
    const live = sql`g.organization_id, g.user_id, g.client_id AS grant_client_id, g.resource AS grant_resource,
      a.role, a.access_token_lifetime`;
    if (kind === 'refreshes') {
      return db.prepare(sql`WITH v AS (SELECT * FROM ${items}),
        changed AS (UPDATE oauth_refresh_chains r SET token_hash = v.next_hash, refreshed_at = ${param('at')}::timestamptz
          FROM v WHERE r.id = v.chain AND r.token_hash = v.hash AND ${client}
          RETURNING v.ord, r.grant_id, r.scope)
        SELECT ch.ord, ch.grant_id, ch.scope, ${live}
        FROM changed ch LEFT JOIN (${GRANT_AND_MEMBER}) ON g.id = ch.grant_id AND g.status = 'active'`);
    }
    return db.prepare(sql`WITH v AS (SELECT * FROM ${items}),
      changed AS (UPDATE oauth_codes o SET used_at = ${param('at')}::timestamptz
        FROM v WHERE o.code_hash = v.hash AND o.used_at IS NULL AND o.expires_at > ${param('at')}::timestamptz
          AND ${client}
        RETURNING v.ord, o.grant_id, o.client_id, o.redirect_uri, o.code_challenge, o.resource, o.scope),
      found AS (SELECT ch.*, ${live} FROM changed ch LEFT JOIN (${GRANT_AND_MEMBER}) ON g.id = ch.grant_id AND g.status = 'active'),
      chained AS (INSERT INTO oauth_refresh_chains (id, grant_id, token_hash, scope, created_at, refreshed_at)
        SELECT v.chain, f.grant_id, v.token_hash, f.scope, ${param('at')}::timestamptz, NULL FROM found f JOIN v ON v.ord = f.ord
        WHERE f.organization_id IS NOT NULL AND f.client_id = v.client_id AND f.redirect_uri = v.redirect_uri
          AND f.code_challenge = v.challenge AND (v.resource IS NULL OR f.resource = v.resource)
        RETURNING id)
      SELECT f.*, (SELECT COUNT(*) FROM chained c JOIN v ON v.chain = c.id WHERE v.ord = f.ord) AS chained FROM found f`);
  }

  /**
   * PostgreSQL: a batch of code redemptions (`codes`) or of refresh redemptions in one statement; what each item
   * redeemed by its `ord` (absent: nothing). Null on SQLite.
   */
  async redeemAtOnce(
    kind: 'codes' | 'refreshes',
    batch: readonly BatchRedemption[],
    now: Date,
    tx: DirectTransaction,
  ): Promise<Map<number, Redeemed<CodeBinding> | Redeemed<RefreshBinding>> | null> {
    const statement = kind === 'codes' ? this.codesAtOnce : this.refreshesAtOnce;
    if (statement === null) return null;
    const items = batch.map((item) => ({
      ord: item.ord,
      hash: item.hash,
      client: item.client?.id ?? null,
      used_after: item.client?.usedAfter.toISOString() ?? null,
      chain: item.first?.id ?? item.chain?.id ?? null,
      next_hash: item.chain?.nextHash ?? null,
      token_hash: item.first?.tokenHash ?? null,
      client_id: item.first?.clientId ?? null,
      redirect_uri: item.first?.redirectUri ?? null,
      challenge: item.first?.challenge ?? null,
      resource: item.first?.resource ?? null,
    }));
    const rows = await tx.run<
      CodeRow & RefreshRow & LiveColumns & { ord: number; chained?: string | number },
      { items: object[]; at: string }
    >(statement, { items, at: now.toISOString() });
    const redeemed = new Map<number, Redeemed<CodeBinding> | Redeemed<RefreshBinding>>();
    for (const row of rows) {
      const binding = kind === 'codes' ? codeBinding(row) : { grantId: row.grant_id, scope: row.scope };
      redeemed.set(row.ord, {
        redeemed: binding as CodeBinding,
        live: liveOf(row),
        chained: Number(row.chained) === 1,
      });
    }
    return redeemed;
  }

  /**
   * A token's liveness: the grant's owner and status with its person's membership. A grant has no permissions of its
   * own (its token carries resource-server scopes), no expiry (its refresh tokens do), no allowlist and no rate limit:
   * live while active and its person a member.
   */
  async read(id: string): Promise<CredentialState | undefined> {
    const row = await this.credentialById(id);
    return row === undefined
      ? undefined
      : credentialState(row, { status: row.status === 'active' ? 'ACTIVE' : 'REVOKED' });
  }

  async findById(id: string): Promise<Grant | null> {
    const rows = await this.db.rows<RawRow, { id: string }>(this.byId, { id });
    return rows[0] === undefined ? null : this.rows.toEntity(rows[0]);
  }

  async listForOwner(owner: OwnerIds): Promise<Grant[]> {
    const args = { organizationId: owner.organizationId, userId: owner.userId };
    return (await this.db.rows<RawRow, OwnerIds>(this.ownerGrants, args)).map(this.rows.toEntity);
  }

  async listForOrganization(organizationId: string): Promise<Grant[]> {
    const rows = await this.db.rows<RawRow, { organizationId: string }>(this.organizationGrants, { organizationId });
    return rows.map(this.rows.toEntity);
  }

  /** The person's active grant to this client for this resource, if any. */
  async activeGrant(owner: OwnerIds, clientId: string, resource: string): Promise<Grant | null> {
    const args = { organizationId: owner.organizationId, userId: owner.userId, clientId, resource };
    const rows = await this.db.rows<RawRow, OwnerIds & { clientId: string; resource: string }>(this.activeFor, args);
    return rows[0] === undefined ? null : this.rows.toEntity(rows[0]);
  }

  /** Stores the grant unless its person is no longer a member of its organization; whether it stored it. */
  async insert(grant: Grant, tx: Transaction): Promise<boolean> {
    const rows = await this.db.run(tx, this.insertGrant, {
      id: grant.id,
      organizationId: grant.organizationId,
      userId: grant.userId,
      clientId: grant.clientId,
      clientName: grant.clientName,
      resource: grant.resource,
      scope: grant.scope,
      createdAt: grant.createdAt.toISOString(),
    });
    return rows.length === 1;
  }

  async updateScope(id: string, scope: string, clientName: string, tx: Transaction): Promise<void> {
    const statement = this.db.prepare<{ id: string; scope: string; clientName: string }>(
      sql`UPDATE oauth_grants SET scope = ${param('scope')}, client_name = ${param('clientName')}
        WHERE id = ${param('id')} AND status = 'active'`,
    );
    await this.db.affected(tx, statement, { id, scope, clientName });
  }

  /** Revokes the owner's grant `id` if active, its refresh tokens deleted: its id, or none. */
  async revoke(owner: OwnerIds, id: string, at: Date, tx: Transaction): Promise<string[]> {
    return this.revokeWith(this.revokeOne, { ...ownerArgs(owner), id, at: at.toISOString() }, tx);
  }

  /** Every active grant of the owner revoked (a member's removal, under the owner's lock), their refresh tokens deleted. */
  async revokeAllOf(owner: OwnerIds, at: Date, tx: Transaction): Promise<string[]> {
    return this.revokeWith(this.revokeAll, { ...ownerArgs(owner), at: at.toISOString() }, tx);
  }

  /** Revokes every active grant of the client (its removal): their ids and owners. */
  async revokeForClient(clientId: string, at: Date, tx: Transaction): Promise<Array<OwnerIds & { id: string }>> {
    const columns = 'id, organization_id, user_id';
    const statement = this.db.prepare<{ clientId: string; at: string }>(
      this.db.returning(
        sql`UPDATE oauth_grants SET status = 'revoked', revoked_at = ${param('at')}
          WHERE client_id = ${param('clientId')} AND status = 'active' RETURNING ${raw(columns)}`,
        columns,
      ),
    );
    const rows = await this.db.run<
      { id: string; organization_id: string; user_id: string },
      { clientId: string; at: string }
    >(tx, statement, { clientId, at: at.toISOString() });
    if (rows.length > 0) await this.db.affected(tx, this.deleteTokens, { ids: rows.map((row) => row.id) });
    return rows.map((row) => ({ id: row.id, organizationId: row.organization_id, userId: row.user_id }));
  }

  async insertCode(codeHash: string, binding: CodeBinding, expiresAt: Date): Promise<void> {
    const statement = this.db.prepare<Record<string, string>>(sql`INSERT INTO oauth_codes
      (code_hash, grant_id, client_id, redirect_uri, code_challenge, resource, scope, expires_at, used_at)
      VALUES (${param('codeHash')}, ${param('grantId')}, ${param('clientId')}, ${param('redirectUri')},
        ${param('codeChallenge')}, ${param('resource')}, ${param('scope')}, ${param('expiresAt')}, NULL)`);
    await this.db.run(this.dataSource.manager, statement, {
      codeHash,
      ...binding,
      expiresAt: expiresAt.toISOString(),
    });
  }

  /**
   * Redeems the code, once (the UPDATE decides): its binding and its grant if live; null when it redeemed nothing
   * (spentCodeReason says why). Expired codes are deleted by pruneCodes, so the table holds only the last minute's.
   */
  async redeemCode(
    codeHash: string,
    now: Date,
    client: PublicClientCondition | null,
    tx: DirectTransaction,
  ): Promise<Redeemed<CodeBinding> | null> {
    const row = await this.redeem<CodeRow>(sqliteOnly(this.codeRedemption), codeHash, now, client, tx);
    if (row === null) return null;
    return {
      redeemed: codeBinding(row),
      live: liveOf(row),
      chained: false,
    };
  }

  /**
   * Replaces the chain's current refresh token (`tokenHash`) by the next (`nextHash`), once (the UPDATE decides): its
   * grant and scope, and the grant if live; null when the token is not the chain's current one.
   */
  async redeemRefreshToken(
    chain: string,
    tokenHash: string,
    nextHash: string,
    now: Date,
    client: PublicClientCondition | null,
    tx: DirectTransaction,
  ): Promise<Redeemed<RefreshBinding> | null> {
    const row = await this.redeem<RefreshRow>(sqliteOnly(this.refreshRedemption), tokenHash, now, client, tx, {
      chain,
      next: nextHash,
    });
    if (row === null) return null;
    return { redeemed: { grantId: row.grant_id, scope: row.scope }, live: liveOf(row), chained: false };
  }

  /** Why a code redeemed nothing: unknown, expired, or used already (with its grant, which the reuse ends). */
  async spentCodeReason(codeHash: string, now: Date): Promise<SpentReason | { used: string }> {
    const rows = await this.db.rows<
      { used_at: unknown; expires_at: Date | string; grant_id: string },
      { hash: string }
    >(this.spentCode, { hash: codeHash });
    const row = rows[0];
    if (row === undefined) return 'unknown';
    if (row.used_at !== null) return { used: row.grant_id };
    return toDate(row.expires_at).getTime() <= now.getTime() ? 'expired' : 'unknown';
  }

  /**
   * Why a refresh token redeemed nothing: its chain is unknown (never one, or its grant ended), or it names a chain
   * whose current token it is not: a reuse (with the chain's grant, which the reuse ends).
   */
  async spentRefreshReason(chain: string): Promise<'unknown' | { used: string }> {
    const rows = await this.db.rows<{ grant_id: string }, { chain: string }>(this.refreshChain, { chain });
    return rows[0] === undefined ? 'unknown' : { used: rows[0].grant_id };
  }

  async pruneCodes(before: Date): Promise<void> {
    const statement = this.db.prepare<{ before: string }>(
      sql`DELETE FROM oauth_codes WHERE expires_at < ${param('before')}`,
    );
    await this.db.affected(this.dataSource.manager, statement, { before: before.toISOString() });
  }

  /** A new chain, begun by a code's redemption, with its first token's hash. */
  async insertRefreshChain(
    chain: string,
    tokenHash: string,
    grantId: string,
    scope: string,
    at: Date,
    tx: DirectTransaction,
  ): Promise<void> {
    await tx.run(this.insertChain, { chain, tokenHash, grantId, scope, at: at.toISOString() });
  }

  private async redeem<Row>(
    statements: RedeemStatements,
    hash: string,
    now: Date,
    client: PublicClientCondition | null,
    tx: DirectTransaction,
    chain: { chain: string; next: string } | Record<string, never> = {},
  ): Promise<(Row & LiveColumns) | null> {
    const at = now.toISOString();
    const rows =
      client === null
        ? await tx.run<Row & LiveRow, RedeemArgs>(statements.plain, { hash, at, ...chain })
        : await tx.run<Row & LiveRow, RedeemArgs>(statements.withClient, {
            hash,
            at,
            ...chain,
            client: client.id,
            usedAfter: client.usedAfter.toISOString(),
          });
    const row = rows[0];
    if (row === undefined) return null;
    // The grant's columns in one JSON array, or null.
    const live = row.live === null ? [] : (JSON.parse(row.live) as Array<string | number | null>);
    return Object.assign(row, {
      organization_id: (live[0] as string | undefined) ?? null,
      user_id: (live[1] as string | undefined) ?? null,
      grant_client_id: (live[2] as string | undefined) ?? null,
      grant_resource: (live[3] as string | undefined) ?? null,
      role: (live[4] as MemberAccessColumns['role'] | undefined) ?? null,
      access_token_lifetime: live[5] ?? null,
    });
  }

  private async revokeWith(statement: Statement<RevokeArgs>, args: RevokeArgs, tx: Transaction): Promise<string[]> {
    const ids = (await this.db.run<{ id: string }, RevokeArgs>(tx, statement, args)).map((row) => row.id);
    if (ids.length > 0) await this.db.affected(tx, this.deleteTokens, { ids });
    return ids;
  }
}

/** One redemption of a PostgreSQL batch (`redeemAtOnce`): its place in the batch, and what it presents. */
export interface BatchRedemption {
  ord: number;
  hash: string;
  client: PublicClientCondition | null;
  /** A code's: its first chain and the binding presented; a refresh's: its chain and the next token's hash. */
  first?: FirstChain;
  chain?: { id: string; nextHash: string };
}

/** A grant joined to its person's membership (role, token lifetime), for a redemption's live grant. */
const GRANT_AND_MEMBER = sql`oauth_grants g JOIN ${raw(MEMBER_ACCESS_VIEW)} a
  ON a.organization_id = g.organization_id AND a.user_id = g.user_id`;

/**
 * A public client's condition on a redemption: the client exists, has no secret, and is an organization's or a dynamic
 * one not idle since `usedAfter` (nor registration off).
 */
function publicClient(client: Param | Sql, usedAfter: Param | Sql): Sql {
  return sql`EXISTS (SELECT 1 FROM oauth_clients c WHERE c.id = ${client} AND c.secret_hash IS NULL
    AND (c.kind = 'organization' OR COALESCE(c.last_used_at, c.created_at) > ${usedAfter}))`;
}

/** The statements of one redemption: without, and with, a public client's condition. */
interface RedeemStatements {
  plain: Statement<RedeemArgs>;
  withClient: Statement<RedeemArgs>;
}

/** SQLite's redemption rows carry the live grant as JSON text (`live`). */
type LiveRow = { live: string | null };

function codeBinding(row: CodeRow): CodeBinding {
  return {
    grantId: row.grant_id,
    clientId: row.client_id,
    redirectUri: row.redirect_uri,
    codeChallenge: row.code_challenge,
    resource: row.resource,
    scope: row.scope,
  };
}

function sqliteOnly(statements: RedeemStatements | null): RedeemStatements {
  if (statements === null) throw new Error('PostgreSQL redeems a turn at once (redeemAtOnce)');
  return statements;
}

/** The grant of a redemption's row, if active and its person a member. */
function liveOf(row: LiveColumns): LiveGrant | null {
  const access = toMembershipAccess(row);
  if (access === null || row.organization_id === null || row.user_id === null) return null;
  return {
    organizationId: row.organization_id,
    userId: row.user_id,
    clientId: row.grant_client_id!,
    resource: row.grant_resource!,
    access,
  };
}

function ownerArgs(owner: OwnerIds): OwnerIds {
  return { organizationId: owner.organizationId, userId: owner.userId };
}
