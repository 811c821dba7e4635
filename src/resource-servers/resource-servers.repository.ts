import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EntityRows, RawRow } from '../database/entity-rows';
import { batchedById } from '../database/batch-loader';
import { Dialect, param, raw, sql, Statement } from '../database/sql';
import { ResourceServer } from './resource-server.entity';
import type { DeclaredScope } from './scopes';

interface ResourceServerRow {
  id: string;
  audience: string;
  secret_hash: string;
}

interface InsertArgs {
  id: string;
  name: string;
  audience: string;
  secretHash: string;
  scopes: string;
  createdAt: string;
  secretRotatedAt: string;
}

/** Every query on resource_servers; the two reads of introspection and forward auth have fixed SQL. */
@Injectable()
export class ResourceServersRepository {
  private readonly db: Dialect;
  private readonly credentialById: (id: string) => Promise<ResourceServerRow | undefined>;
  private readonly byAudience: Statement<{ audience: string }>;
  private readonly serverByAudience: Statement<{ audience: string }>;
  private readonly all: Statement<Record<string, never>>;
  private readonly insertServer: Statement<InsertArgs>;
  private readonly remove: Statement<{ audience: string }>;
  private readonly rotate: Statement<{ audience: string; secretHash: string; at: string }>;
  private readonly scopesByAudience: Statement<{ audience: string }>;
  private readonly updateScopes: Statement<{ audience: string; scopes: string }>;

  /** resource_servers as ResourceServer describes it. */
  private readonly rows: EntityRows<ResourceServer>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.db = Dialect.of(dataSource);
    this.rows = EntityRows.of(dataSource, ResourceServer);
    const COLUMNS = this.rows.columns;
    // Every introspection reads its caller: batched per event-loop turn, as the key lookups are.
    const byIds = this.db.prepare<{ ids: readonly string[] }>(
      sql`SELECT id, audience, secret_hash FROM resource_servers WHERE ${this.db.idIn('id', 'ids')}`,
    );
    this.credentialById = batchedById((ids) =>
      this.db.rows<ResourceServerRow, { ids: readonly string[] }>(byIds, { ids }),
    );
    this.byAudience = this.db.prepare(
      sql`SELECT id, audience, secret_hash FROM resource_servers WHERE audience = ${param('audience')}`,
    );
    this.serverByAudience = this.db.prepare(
      sql`SELECT ${raw(COLUMNS)} FROM resource_servers WHERE audience = ${param('audience')}`,
    );
    this.all = this.db.prepare(sql`SELECT ${raw(COLUMNS)} FROM resource_servers ORDER BY created_at ASC, id ASC`);
    // The unique audience decides, on any instance: a taken one inserts nothing and returns no row.
    this.insertServer = this.db.prepare(sql`INSERT INTO resource_servers
        (id, name, audience, secret_hash, scopes, created_at, secret_rotated_at)
      VALUES (${param('id')}, ${param('name')}, ${param('audience')}, ${param('secretHash')}, ${param('scopes')},
        ${param('createdAt')}, ${param('secretRotatedAt')})
      ON CONFLICT DO NOTHING RETURNING id`);
    this.remove = this.db.prepare(sql`DELETE FROM resource_servers WHERE audience = ${param('audience')}`);
    this.rotate = this.db.prepare(sql`UPDATE resource_servers
      SET secret_hash = ${param('secretHash')}, secret_rotated_at = ${param('at')} WHERE audience = ${param('audience')}`);
    this.scopesByAudience = this.db.prepare(
      sql`SELECT scopes FROM resource_servers WHERE audience = ${param('audience')}`,
    );
    this.updateScopes = this.db.prepare(
      sql`UPDATE resource_servers SET scopes = ${param('scopes')} WHERE audience = ${param('audience')}`,
    );
  }

  /** The audience and secret hash of the resource server with this id (introspection's client check). */
  async findCredential(id: string): Promise<{ id: string; audience: string; secretHash: string } | undefined> {
    const row = await this.credentialById(id);
    return row === undefined ? undefined : { id: row.id, audience: row.audience, secretHash: row.secret_hash };
  }

  async audienceExists(audience: string): Promise<boolean> {
    const rows = await this.db.rows<ResourceServerRow, { audience: string }>(this.byAudience, { audience });
    return rows.length > 0;
  }

  /** False when the audience is taken (the unique index decides, on any instance). */
  async insert(server: ResourceServer): Promise<boolean> {
    const rows = await this.db.run<{ id: string }, InsertArgs>(this.dataSource.manager, this.insertServer, {
      id: server.id,
      name: server.name,
      audience: server.audience,
      secretHash: server.secretHash,
      scopes: JSON.stringify(server.scopes),
      createdAt: server.createdAt.toISOString(),
      secretRotatedAt: server.secretRotatedAt.toISOString(),
    });
    return rows.length === 1;
  }

  async findByAudience(audience: string): Promise<ResourceServer | null> {
    const rows = await this.db.rows<RawRow, { audience: string }>(this.serverByAudience, { audience });
    return rows[0] === undefined ? null : this.rows.toEntity(rows[0]);
  }

  async findAll(): Promise<ResourceServer[]> {
    return (await this.db.rows<RawRow>(this.all, {})).map(this.rows.toEntity);
  }

  async delete(audience: string): Promise<boolean> {
    return (await this.db.affected(this.dataSource.manager, this.remove, { audience })) > 0;
  }

  /** The scopes the server of this audience declares; null when no server has it (one read per exchange). */
  async declaredScopes(audience: string): Promise<DeclaredScope[] | null> {
    const rows = await this.db.rows<{ scopes: string }, { audience: string }>(this.scopesByAudience, { audience });
    return rows[0] === undefined ? null : (JSON.parse(rows[0].scopes) as DeclaredScope[]);
  }

  async setScopes(audience: string, scopes: readonly DeclaredScope[]): Promise<boolean> {
    const args = { audience, scopes: JSON.stringify(scopes) };
    return (await this.db.affected(this.dataSource.manager, this.updateScopes, args)) > 0;
  }

  async updateSecret(audience: string, secretHash: string, at: Date): Promise<boolean> {
    const args = { audience, secretHash, at: at.toISOString() };
    return (await this.db.affected(this.dataSource.manager, this.rotate, args)) > 0;
  }
}
