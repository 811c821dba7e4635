import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { batchedById } from '../database/batch-loader';
import { toDate } from '../database/columns';
import type { RawRow } from '../database/entity-rows';
import { param, raw, sql, Sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
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
  lastUsedAt: Date | null;
  access: MembershipAccess;
}

type LiveGrantRow = MemberAccessColumns & {
  organization_id: string;
  user_id: string;
  client_id: string;
  resource: string;
  last_used_at: Date | string | null;
};

/**
 * Every query on oauth_grants, oauth_codes and oauth_refresh_tokens. A kind of the credential core (CredentialStore):
 * a member's removal revokes the person's grants (revokeAllOf) and a grant's access token is live by `read`.
 */
@Injectable()
export class GrantsRepository extends CredentialStore<OAuthGrant> {
  private readonly liveById: Statement<{ id: string }>;
  private readonly live: Statement<{ id: string; organizationId: string; userId: string }>;
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
    // A code's or a refresh token's redemption: the grant active and its person a member, one query.
    this.live = db.prepare(sql`SELECT a.role, a.access_token_lifetime FROM oauth_grants g ${member('JOIN')}
      WHERE g.id = ${param('id')} AND g.organization_id = ${param('organizationId')} AND g.user_id = ${param('userId')}
        AND g.status = 'active'`);
    // Every code and refresh token request: the grant active, its client and resource, and its person's membership.
    this.liveById = db.prepare(sql`SELECT g.organization_id, g.user_id, g.client_id, g.resource, g.last_used_at,
        a.role, a.access_token_lifetime FROM oauth_grants g
      JOIN ${raw(MEMBER_ACCESS_VIEW)} a ON a.organization_id = g.organization_id AND a.user_id = g.user_id
      WHERE g.id = ${param('id')} AND g.status = 'active'`);
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
    this.deleteTokens = db.prepare(sql`DELETE FROM oauth_refresh_tokens WHERE ${db.idIn('grant_id', 'ids')}`);
  }

  /** The person's membership when the grant is active and they are still a member; else null. */
  async liveAccess(id: string, owner: OwnerIds): Promise<MembershipAccess | null> {
    const args = { id, organizationId: owner.organizationId, userId: owner.userId };
    const rows = await this.db.rows<MemberAccessColumns, OwnerIds & { id: string }>(this.live, args);
    return rows[0] === undefined ? null : toMembershipAccess(rows[0]);
  }

  /** The grant when it is active and its person still a member, with their membership; else null. One query. */
  async liveGrant(id: string): Promise<LiveGrant | null> {
    const rows = await this.db.rows<LiveGrantRow, { id: string }>(this.liveById, { id });
    const row = rows[0];
    const access = row === undefined ? null : toMembershipAccess(row);
    if (row === undefined || access === null) return null;
    return {
      organizationId: row.organization_id,
      userId: row.user_id,
      clientId: row.client_id,
      resource: row.resource,
      lastUsedAt: row.last_used_at === null ? null : toDate(row.last_used_at),
      access,
    };
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

  async touch(id: string, at: Date, tx: Transaction): Promise<void> {
    const statement = this.db.prepare<{ id: string; at: string }>(
      sql`UPDATE oauth_grants SET last_used_at = ${param('at')} WHERE id = ${param('id')}`,
    );
    await this.db.affected(tx, statement, { id, at: at.toISOString() });
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
   * Marks the code used, once, on any instance (the UPDATE decides): its binding, or why not. Expired codes are deleted
   * here, a few at a time, so the table holds only the last minute's.
   */
  async consumeCode(codeHash: string, now: Date, tx: Transaction): Promise<CodeBinding | SpentReason> {
    const at = now.toISOString();
    const columns = 'grant_id, client_id, redirect_uri, code_challenge, resource, scope';
    const consume = this.db.prepare<{ codeHash: string; at: string }>(
      this.db.returning(
        sql`UPDATE oauth_codes SET used_at = ${param('at')}
          WHERE code_hash = ${param('codeHash')} AND used_at IS NULL AND expires_at > ${param('at')}
          RETURNING ${raw(columns)}`,
        columns,
      ),
    );
    const rows = await this.db.run<
      {
        grant_id: string;
        client_id: string;
        redirect_uri: string;
        code_challenge: string;
        resource: string;
        scope: string;
      },
      { codeHash: string; at: string }
    >(tx, consume, { codeHash, at });
    const row = rows[0];
    if (row !== undefined) {
      return {
        grantId: row.grant_id,
        clientId: row.client_id,
        redirectUri: row.redirect_uri,
        codeChallenge: row.code_challenge,
        resource: row.resource,
        scope: row.scope,
      };
    }
    const find = this.db.prepare<{ codeHash: string }>(
      sql`SELECT used_at, grant_id FROM oauth_codes WHERE code_hash = ${param('codeHash')}`,
    );
    const found = await this.db.run<{ used_at: unknown; grant_id: string }, { codeHash: string }>(tx, find, {
      codeHash,
    });
    if (found[0] === undefined) return 'unknown';
    return found[0].used_at === null ? 'expired' : 'used';
  }

  /** The grant a used code was for: its reuse ends it (OAuth 2.1 section 4.1.3). */
  async codeGrant(codeHash: string, tx: Transaction): Promise<string | null> {
    const find = this.db.prepare<{ codeHash: string }>(
      sql`SELECT grant_id FROM oauth_codes WHERE code_hash = ${param('codeHash')}`,
    );
    const rows = await this.db.run<{ grant_id: string }, { codeHash: string }>(tx, find, { codeHash });
    return rows[0]?.grant_id ?? null;
  }

  async pruneCodes(before: Date): Promise<void> {
    const statement = this.db.prepare<{ before: string }>(
      sql`DELETE FROM oauth_codes WHERE expires_at < ${param('before')}`,
    );
    await this.db.affected(this.dataSource.manager, statement, { before: before.toISOString() });
  }

  async insertRefreshToken(tokenHash: string, grantId: string, scope: string, at: Date, tx: Transaction) {
    const statement = this.db.prepare<Record<string, string>>(sql`INSERT INTO oauth_refresh_tokens
      (token_hash, grant_id, scope, created_at, used_at)
      VALUES (${param('tokenHash')}, ${param('grantId')}, ${param('scope')}, ${param('at')}, NULL)`);
    await this.db.run(tx, statement, { tokenHash, grantId, scope, at: at.toISOString() });
  }

  /** Marks the refresh token used, once (the UPDATE decides); its grant and scope, or the grant of a used one. */
  async useRefreshToken(
    tokenHash: string,
    at: Date,
    tx: Transaction,
  ): Promise<{ grantId: string; scope: string } | { reused: string } | null> {
    const use = this.db.prepare<{ tokenHash: string; at: string }>(
      this.db.returning(
        sql`UPDATE oauth_refresh_tokens SET used_at = ${param('at')}
          WHERE token_hash = ${param('tokenHash')} AND used_at IS NULL RETURNING grant_id, scope`,
        'grant_id, scope',
      ),
    );
    const rows = await this.db.run<{ grant_id: string; scope: string }, { tokenHash: string; at: string }>(tx, use, {
      tokenHash,
      at: at.toISOString(),
    });
    if (rows[0] !== undefined) return { grantId: rows[0].grant_id, scope: rows[0].scope };
    const find = this.db.prepare<{ tokenHash: string }>(
      sql`SELECT grant_id FROM oauth_refresh_tokens WHERE token_hash = ${param('tokenHash')}`,
    );
    const found = await this.db.run<{ grant_id: string }, { tokenHash: string }>(tx, find, { tokenHash });
    return found[0] === undefined ? null : { reused: found[0].grant_id };
  }

  private async revokeWith(statement: Statement<RevokeArgs>, args: RevokeArgs, tx: Transaction): Promise<string[]> {
    const ids = (await this.db.run<{ id: string }, RevokeArgs>(tx, statement, args)).map((row) => row.id);
    if (ids.length > 0) await this.db.affected(tx, this.deleteTokens, { ids });
    return ids;
  }
}

function ownerArgs(owner: OwnerIds): OwnerIds {
  return { organizationId: owner.organizationId, userId: owner.userId };
}
