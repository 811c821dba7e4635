import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EntityRows, RawRow } from '../../database/entity-rows';
import { Dialect, join, param, raw, sql, Statement } from '../../database/sql';
import type { Transaction } from '../../database/unit-of-work';
import { RegisteredClient, RegisteredClientKind } from './registered-client.entity';

/** The advisory lock class of dynamic registrations ("dcrg"). */
const DYNAMIC_LOCK_CLASS = 0x64637267;

/** Every query on oauth_clients (docs/mcp.md#clients). */
@Injectable()
export class RegisteredClientsRepository {
  private readonly db: Dialect;
  private readonly rows: EntityRows<RegisteredClient>;
  private readonly byId: Statement<{ id: string }>;
  private readonly ofOrganization: Statement<{ organizationId: string }>;
  private readonly ofKind: Statement<{ kind: RegisteredClientKind }>;
  private readonly all: Statement<Record<string, never>>;
  private readonly touchStale: Statement<{ id: string; at: string; staleBefore: string }>;
  private readonly idle: Statement<{ cutoff: string; limit: number }>;
  private readonly insertClient: Statement<RawRow>;
  private readonly deleteClient: Statement<{ id: string }>;
  private readonly dynamicLock: Statement<Record<string, never>> | null;
  private readonly dynamicCount: Statement<Record<string, never>>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.db = Dialect.of(dataSource);
    this.rows = EntityRows.of(dataSource, RegisteredClient);
    const select = sql`SELECT ${raw(this.rows.columns)} FROM oauth_clients`;
    this.byId = this.db.prepare(sql`${select} WHERE id = ${param('id')}`);
    this.ofOrganization = this.db.prepare(
      sql`${select} WHERE organization_id = ${param('organizationId')} ORDER BY created_at DESC, id DESC`,
    );
    this.ofKind = this.db.prepare(sql`${select} WHERE kind = ${param('kind')} ORDER BY created_at DESC, id DESC`);
    this.all = this.db.prepare(sql`${select} ORDER BY created_at DESC, id DESC`);
    // At most one write an hour per client (the service checks the row it read; this, another instance's write).
    this.touchStale = this.db.prepare(sql`UPDATE oauth_clients SET last_used_at = ${param('at')}
      WHERE id = ${param('id')} AND (last_used_at IS NULL OR last_used_at < ${param('staleBefore')})`);
    this.idle = this.db.prepare(sql`SELECT id FROM oauth_clients
      WHERE kind = 'dynamic' AND COALESCE(last_used_at, created_at) < ${param('cutoff')}
      ORDER BY created_at LIMIT ${param('limit')}`);
    // Every column, each bound from the entity's record (EntityRows.toRecord).
    this.insertClient = this.db.prepare(sql`INSERT INTO oauth_clients (${raw(this.rows.columns)})
      VALUES (${join(
        this.rows.columnNames.map((column) => sql`${param(column)}`),
        ', ',
      )})`);
    this.deleteClient = this.db.prepare(sql`DELETE FROM oauth_clients WHERE id = ${param('id')}`);
    // Dynamic registrations count and insert one at a time (PostgreSQL; SQLite has one writer), so the cap is exact.
    const lock = this.db.transactionLock(DYNAMIC_LOCK_CLASS, sql`'dynamic'`);
    this.dynamicLock = lock === null ? null : this.db.prepare(lock);
    this.dynamicCount = this.db.prepare(sql`SELECT COUNT(*) AS n FROM oauth_clients WHERE kind = 'dynamic'`);
  }

  async findById(id: string): Promise<RegisteredClient | null> {
    const found = await this.db.rows<RawRow, { id: string }>(this.byId, { id });
    return found[0] === undefined ? null : this.rows.toEntity(found[0]);
  }

  async listForOrganization(organizationId: string): Promise<RegisteredClient[]> {
    const found = await this.db.rows<RawRow, { organizationId: string }>(this.ofOrganization, { organizationId });
    return found.map(this.rows.toEntity);
  }

  async list(kind?: RegisteredClientKind): Promise<RegisteredClient[]> {
    const found =
      kind === undefined
        ? await this.db.rows<RawRow>(this.all, {})
        : await this.db.rows<RawRow, { kind: RegisteredClientKind }>(this.ofKind, { kind });
    return found.map(this.rows.toEntity);
  }

  async insert(client: RegisteredClient, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.insertClient, this.rows.toRecord(client));
  }

  /** Stores a dynamic client unless `max` of them are stored already (under a lock: one registration at a time). */
  async insertDynamic(client: RegisteredClient, max: number, tx: Transaction): Promise<boolean> {
    if (this.dynamicLock !== null) await this.db.run(tx, this.dynamicLock, {});
    const [{ n }] = await this.db.run<{ n: number | string }>(tx, this.dynamicCount, {});
    if (Number(n) >= max) return false;
    await this.insert(client, tx);
    return true;
  }

  /** Whether the client was there to delete. */
  async delete(id: string, tx: Transaction): Promise<boolean> {
    return (await this.db.affected(tx, this.deleteClient, { id })) > 0;
  }

  /** Records a use, unless another instance recorded one within the hour before `at`. */
  async touch(id: string, at: Date): Promise<void> {
    await this.db.affected(this.dataSource.manager, this.touchStale, {
      id,
      at: at.toISOString(),
      staleBefore: new Date(at.getTime() - 3_600_000).toISOString(),
    });
  }

  /** Dynamic clients not used (nor registered) since `cutoff`, oldest first, at most `limit`. */
  async idleDynamic(cutoff: Date, limit: number): Promise<string[]> {
    const found = await this.db.rows<{ id: string }, { cutoff: string; limit: number }>(this.idle, {
      cutoff: cutoff.toISOString(),
      limit,
    });
    return found.map((row) => row.id);
  }
}
