import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EntityRows, RawRow } from '../database/entity-rows';
import { Dialect, param, raw, sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import { SsfStream } from './ssf-stream.entity';

type InsertArgs = {
  id: string;
  resourceServerId: string;
  description: string | null;
  createdAt: string;
  cap: number;
};

/** First half of the resource server's PostgreSQL advisory-lock key (the second: its id, hashed). */
const STREAMS_LOCK_CLASS = 0x73736673;

/** Every query on ssf_streams, the instance streams (docs/adr/0031-revocation-feed-in-production.md). */
@Injectable()
export class SsfStreamsRepository {
  private readonly db: Dialect;
  private readonly insertWithinCap: Statement<InsertArgs>;
  private readonly lock: Statement<{ resourceServerId: string }> | null;
  private readonly byId: Statement<{ id: string; resourceServerId: string }>;
  private readonly polled: Statement<{ id: string; at: string; before: string }>;
  private readonly remove: Statement<{ id: string; resourceServerId: string }>;
  private readonly idle: Statement<{ before: string }>;
  /** ssf_streams as SsfStream describes it. */
  private readonly rows: EntityRows<SsfStream>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    this.rows = EntityRows.of(dataSource, SsfStream);
    this.insertWithinCap = db.prepare(sql`INSERT INTO ssf_streams
        (id, resource_server_id, description, created_at, last_polled_at)
      SELECT ${db.cast(param('id'), 'uuid')}, ${db.cast(param('resourceServerId'), 'uuid')},
        ${db.cast(param('description'), 'varchar')}, ${db.cast(param('createdAt'), 'timestamptz')},
        ${db.cast(param('createdAt'), 'timestamptz')}
      WHERE (SELECT count(*) FROM ssf_streams WHERE resource_server_id = ${param('resourceServerId')}) < ${param('cap')}
      RETURNING id`);
    const lock = db.transactionLock(STREAMS_LOCK_CLASS, sql`${db.cast(param('resourceServerId'), 'text')}`);
    this.lock = lock === null ? null : db.prepare(lock);
    this.byId = db.prepare(sql`SELECT ${raw(this.rows.columns)}
      FROM ssf_streams WHERE id = ${param('id')} AND resource_server_id = ${param('resourceServerId')}`);
    // Conditional: of the polls of one minute, only the first writes.
    this.polled = db.prepare(sql`UPDATE ssf_streams SET last_polled_at = ${param('at')}
      WHERE id = ${param('id')} AND last_polled_at < ${param('before')}`);
    this.remove = db.prepare(
      db.returning(
        sql`DELETE FROM ssf_streams
          WHERE id = ${param('id')} AND resource_server_id = ${param('resourceServerId')} RETURNING id`,
        'id',
      ),
    );
    this.idle = db.prepare(
      db.returning(sql`DELETE FROM ssf_streams WHERE last_polled_at < ${param('before')} RETURNING id`, 'id'),
    );
  }

  /** Stores the stream unless its resource server has `cap` already (counted under a lock on PostgreSQL). */
  async insert(stream: SsfStream, cap: number, tx: Transaction): Promise<boolean> {
    if (this.lock !== null) await this.db.run(tx, this.lock, { resourceServerId: stream.resourceServerId });
    const rows = await this.db.run(tx, this.insertWithinCap, {
      id: stream.id,
      resourceServerId: stream.resourceServerId,
      description: stream.description,
      createdAt: stream.createdAt.toISOString(),
      cap,
    });
    return rows.length === 1;
  }

  /** The resource server's stream with this id; null for another server's or an unknown one. */
  async find(id: string, resourceServerId: string): Promise<SsfStream | null> {
    const rows = await this.db.rows<RawRow, { id: string; resourceServerId: string }>(this.byId, {
      id,
      resourceServerId,
    });
    return rows.length === 0 ? null : this.rows.toEntity(rows[0]);
  }

  /** Records a poll at `at` unless one was recorded at or after `before`. */
  async markPolled(id: string, at: Date, before: Date): Promise<void> {
    await this.db.run(this.dataSource.manager, this.polled, {
      id,
      at: at.toISOString(),
      before: before.toISOString(),
    });
  }

  /** Deletes the resource server's stream; false if it had none with this id. */
  async delete(id: string, resourceServerId: string, tx: Transaction): Promise<boolean> {
    const rows = await this.db.run(tx, this.remove, { id, resourceServerId });
    return rows.length === 1;
  }

  /** Deletes the streams last polled before `before`, and returns their ids. */
  async deleteIdle(before: Date, tx: Transaction): Promise<string[]> {
    const rows = await this.db.run<{ id: string }, { before: string }>(tx, this.idle, { before: before.toISOString() });
    return rows.map((row) => row.id);
  }
}
