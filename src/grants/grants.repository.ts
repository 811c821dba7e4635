import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { toDate } from '../database/columns';
import { Dialect, param, raw, sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import {
  MEMBER_ACCESS_VIEW,
  MemberAccessColumns,
  MembershipAccess,
  toMembershipAccess,
} from '../identity/member-access';

export type GrantStatus = 'active' | 'revoked';

/** A person's consent to a client for a resource server (docs/mcp.md#grants). */
export interface Grant {
  id: string;
  organizationId: string;
  userId: string;
  clientId: string;
  clientName: string;
  resource: string;
  /** Granted scopes, space-separated, sorted. */
  scope: string;
  status: GrantStatus;
  createdAt: Date;
  lastUsedAt: Date | null;
  revokedAt: Date | null;
}

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

interface GrantRow {
  id: string;
  organization_id: string;
  user_id: string;
  client_id: string;
  client_name: string;
  resource: string;
  scope: string;
  status: GrantStatus;
  created_at: Date | string;
  last_used_at: Date | string | null;
  revoked_at: Date | string | null;
}

const COLUMNS =
  'id, organization_id, user_id, client_id, client_name, resource, scope, status, created_at, last_used_at, revoked_at';

function toGrant(row: GrantRow): Grant {
  return {
    id: row.id,
    organizationId: row.organization_id,
    userId: row.user_id,
    clientId: row.client_id,
    clientName: row.client_name,
    resource: row.resource,
    scope: row.scope,
    status: row.status,
    createdAt: toDate(row.created_at),
    lastUsedAt: row.last_used_at === null ? null : toDate(row.last_used_at),
    revokedAt: row.revoked_at === null ? null : toDate(row.revoked_at),
  };
}

type Owner = { organizationId: string; userId: string };

/** A grant as the token authenticator reads it: whose, its status, and its person's membership read with it. */
export interface GrantCredential extends Owner {
  status: GrantStatus;
  ownerAccess: MembershipAccess | null;
}

type GrantCredentialRow = MemberAccessColumns & { organization_id: string; user_id: string; status: GrantStatus };

/** An active grant whose person is a member, as a token request issues under it. */
export interface LiveGrant extends Owner {
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

/** Every query on oauth_grants, oauth_codes and oauth_refresh_tokens. */
@Injectable()
export class GrantsRepository {
  private readonly db: Dialect;
  private readonly liveById: Statement<{ id: string }>;
  private readonly byId: Statement<{ id: string }>;
  private readonly credentialById: Statement<{ id: string }>;
  private readonly ownerGrants: Statement<Owner>;
  private readonly organizationGrants: Statement<{ organizationId: string }>;
  private readonly activeFor: Statement<Owner & { clientId: string; resource: string }>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.db = Dialect.of(dataSource);
    // Every code and refresh token request: the grant active, its client and resource, and its person's membership.
    this.liveById = this.db.prepare(sql`SELECT g.organization_id, g.user_id, g.client_id, g.resource, g.last_used_at,
        a.role, a.access_token_lifetime FROM oauth_grants g
      JOIN ${raw(MEMBER_ACCESS_VIEW)} a ON a.organization_id = g.organization_id AND a.user_id = g.user_id
      WHERE g.id = ${param('id')} AND g.status = 'active'`);
    this.byId = this.db.prepare(sql`SELECT ${raw(COLUMNS)} FROM oauth_grants WHERE id = ${param('id')}`);
    // Every request with a grant's access token: the grant and its person's membership, one query (CredentialKinds).
    this.credentialById = this.db.prepare(sql`SELECT g.organization_id, g.user_id, g.status, a.role,
        a.access_token_lifetime FROM oauth_grants g
      LEFT JOIN ${raw(MEMBER_ACCESS_VIEW)} a ON a.organization_id = g.organization_id AND a.user_id = g.user_id
      WHERE g.id = ${param('id')}`);
    this.ownerGrants = this.db.prepare(sql`SELECT ${raw(COLUMNS)} FROM oauth_grants
      WHERE organization_id = ${param('organizationId')} AND user_id = ${param('userId')}
      ORDER BY created_at DESC, id DESC`);
    this.organizationGrants = this.db.prepare(sql`SELECT ${raw(COLUMNS)} FROM oauth_grants
      WHERE organization_id = ${param('organizationId')} ORDER BY created_at DESC, id DESC`);
    this.activeFor = this.db.prepare(sql`SELECT ${raw(COLUMNS)} FROM oauth_grants
      WHERE organization_id = ${param('organizationId')} AND user_id = ${param('userId')}
        AND client_id = ${param('clientId')} AND resource = ${param('resource')} AND status = 'active'
      ORDER BY created_at DESC, id DESC`);
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

  /** The grant's owner and status with its person's membership (null: no longer a member); undefined: no such grant. */
  async findCredential(id: string): Promise<GrantCredential | undefined> {
    const rows = await this.db.rows<GrantCredentialRow, { id: string }>(this.credentialById, { id });
    const row = rows[0];
    if (row === undefined) return undefined;
    return {
      organizationId: row.organization_id,
      userId: row.user_id,
      status: row.status,
      ownerAccess: toMembershipAccess(row),
    };
  }

  async findById(id: string): Promise<Grant | null> {
    const rows = await this.db.rows<GrantRow, { id: string }>(this.byId, { id });
    return rows[0] === undefined ? null : toGrant(rows[0]);
  }

  async listForOwner(owner: Owner): Promise<Grant[]> {
    return (await this.db.rows<GrantRow, Owner>(this.ownerGrants, owner)).map(toGrant);
  }

  async listForOrganization(organizationId: string): Promise<Grant[]> {
    return (await this.db.rows<GrantRow, { organizationId: string }>(this.organizationGrants, { organizationId })).map(
      toGrant,
    );
  }

  /** The person's active grant to this client for this resource, if any. */
  async activeGrant(owner: Owner, clientId: string, resource: string): Promise<Grant | null> {
    const rows = await this.db.rows<GrantRow, Owner & { clientId: string; resource: string }>(this.activeFor, {
      ...owner,
      clientId,
      resource,
    });
    return rows[0] === undefined ? null : toGrant(rows[0]);
  }

  async insert(grant: Grant, tx: Transaction): Promise<void> {
    const statement = this.db.prepare<Record<string, string>>(sql`INSERT INTO oauth_grants (${raw(COLUMNS)})
      VALUES (${param('id')}, ${param('organizationId')}, ${param('userId')}, ${param('clientId')},
        ${param('clientName')}, ${param('resource')}, ${param('scope')}, 'active', ${param('createdAt')}, NULL, NULL)`);
    await this.db.run(tx, statement, {
      id: grant.id,
      organizationId: grant.organizationId,
      userId: grant.userId,
      clientId: grant.clientId,
      clientName: grant.clientName,
      resource: grant.resource,
      scope: grant.scope,
      createdAt: grant.createdAt.toISOString(),
    });
  }

  async updateScope(id: string, scope: string, clientName: string, tx: Transaction): Promise<void> {
    const statement = this.db.prepare<{ id: string; scope: string; clientName: string }>(
      sql`UPDATE oauth_grants SET scope = ${param('scope')}, client_name = ${param('clientName')}
        WHERE id = ${param('id')} AND status = 'active'`,
    );
    await this.db.affected(tx, statement, { id, scope, clientName });
  }

  /** Revokes the active grants matching `where` (one grant of an owner, or all of a member's); their ids. */
  async revoke(filter: { id?: string } & Owner, at: Date, tx: Transaction): Promise<string[]> {
    const byId = filter.id === undefined ? sql`` : sql` AND id = ${param('id')}`;
    const statement = this.db.prepare<Owner & { id?: string; at: string }>(
      this.db.returning(
        sql`UPDATE oauth_grants SET status = 'revoked', revoked_at = ${param('at')}
          WHERE organization_id = ${param('organizationId')} AND user_id = ${param('userId')} AND status = 'active'${byId}
          RETURNING id`,
        'id',
      ),
    );
    const rows = await this.db.run<{ id: string }, Owner & { id?: string; at: string }>(tx, statement, {
      ...filter,
      at: at.toISOString(),
    });
    const ids = rows.map((row) => row.id);
    for (const id of ids) await this.deleteRefreshTokens(id, tx);
    return ids;
  }

  /** Revokes every active grant of the client (its removal): their ids and owners. */
  async revokeForClient(clientId: string, at: Date, tx: Transaction): Promise<Array<Owner & { id: string }>> {
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
    for (const row of rows) await this.deleteRefreshTokens(row.id, tx);
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

  async deleteRefreshTokens(grantId: string, tx: Transaction): Promise<void> {
    const statement = this.db.prepare<{ grantId: string }>(
      sql`DELETE FROM oauth_refresh_tokens WHERE grant_id = ${param('grantId')}`,
    );
    await this.db.affected(tx, statement, { grantId });
  }
}
