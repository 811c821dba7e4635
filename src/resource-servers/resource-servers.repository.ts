import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import { batchedById } from '../database/batch-loader';
import { Dialect, param, sql, Statement } from '../database/sql';
import { ResourceServer } from './resource-server.entity';

interface ResourceServerRow {
  id: string;
  audience: string;
  secret_hash: string;
}

/** Every query on resource_servers; the two reads of introspection and forward auth have fixed SQL. */
@Injectable()
export class ResourceServersRepository {
  private readonly db: Dialect;
  private readonly credentialById: (id: string) => Promise<ResourceServerRow | undefined>;
  private readonly byAudience: Statement<{ audience: string }>;

  constructor(@InjectRepository(ResourceServer) private readonly servers: Repository<ResourceServer>) {
    this.db = Dialect.of(servers.manager.connection);
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
    const result = await this.servers
      .createQueryBuilder()
      .insert()
      .into(ResourceServer)
      .values(server)
      .orIgnore()
      .execute();
    return result.identifiers.length > 0 && (await this.findByAudience(server.audience))?.id === server.id;
  }

  findByAudience(audience: string): Promise<ResourceServer | null> {
    return this.servers.findOneBy({ audience });
  }

  findAll(): Promise<ResourceServer[]> {
    return this.servers.find({ order: { createdAt: 'ASC', id: 'ASC' } });
  }

  async delete(audience: string): Promise<boolean> {
    const result = await this.servers.delete({ audience });
    return (result.affected ?? 0) > 0;
  }

  async updateSecret(audience: string, secretHash: string, at: Date): Promise<boolean> {
    const result = await this.servers.update({ audience }, { secretHash, secretRotatedAt: at });
    return (result.affected ?? 0) > 0;
  }
}
