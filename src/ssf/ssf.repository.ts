import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import type { ClientBase } from 'pg';
import { DataSource } from 'typeorm';
import { Dialect, param, raw, sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import type { SsfEvent } from './ssf-event.entity';

/** A pending delivery with its event, as a poll reads it. */
export interface PendingSet {
  jti: string;
  eventType: SsfEvent['eventType'];
  subject: string;
  payload: string;
  occurredAt: Date;
}

interface PendingRow {
  jti: string;
  event_type: SsfEvent['eventType'];
  subject: string;
  payload: string;
  occurred_at: Date | string;
}

/** Events one INSERT writes at most (one JSON parameter). */
const CHUNK = 200;
/** Streams one read of the poll hub, or one delete, names at most. */
const STREAM_CHUNK = 500;
/** Delivery rows one INSERT writes at most (one JSON parameter, about 150 bytes a row). */
const DELIVERY_CHUNK = 2000;

interface DeliveryRecord {
  id: string;
  stream_id: string;
  event_id: string;
  created_at: string;
}

interface EventRecord {
  id: string;
  event_type: SsfEvent['eventType'];
  subject: string;
  payload: string;
  occurred_at: string;
}

function toPendingSet(row: PendingRow): PendingSet {
  return {
    jti: row.jti,
    eventType: row.event_type,
    subject: row.subject,
    payload: row.payload,
    occurredAt: row.occurred_at instanceof Date ? row.occurred_at : new Date(row.occurred_at),
  };
}

/** The outbox's queries (docs/revocation-feed.md#delivery). */
@Injectable()
export class SsfRepository {
  private readonly db: Dialect;
  private readonly pending: Statement<{ streamId: string; limit: number }>;
  private readonly pendingOf: Statement<{ streamIds: readonly string[]; limit: number }>;
  private readonly deliveriesOf: Statement<{ streamIds: readonly string[] }>;
  private readonly acknowledge: Statement<{ streamId: string; ids: readonly string[]; at: string }>;
  private readonly streams: Statement<Record<string, never>>;
  private readonly deliver: Statement<{ rows: DeliveryRecord[] }>;
  private readonly insertEvents: Statement<{ events: EventRecord[] }>;
  private readonly notify: Statement<{ channel: string }> | null;
  private readonly orphans: Statement<Record<string, never>>;
  private readonly setError: Statement<{ streamId: string; id: string; error: string; at: string }>;
  private readonly oldDeliveries: Statement<{ at: string }>;
  private readonly oldEvents: Statement<{ at: string }>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    this.pending = db.prepare(sql`SELECT d.id AS jti, e.event_type, e.subject, e.payload, e.occurred_at
      FROM ${db.table('ssf_deliveries', 'ssf_deliveries_pending', 'd')} JOIN ssf_events e ON e.id = d.event_id
      WHERE d.stream_id = ${param('streamId')} AND d.acknowledged_at IS NULL
      ORDER BY d.created_at, d.id LIMIT ${param('limit')}`);
    this.acknowledge = db.prepare(sql`UPDATE ssf_deliveries SET acknowledged_at = ${param('at')}
      WHERE stream_id = ${param('streamId')} AND ${db.idIn('id', 'ids')} AND acknowledged_at IS NULL`);
    // Several streams at once, the first `limit` of each: the poll hub's one read per wake-up.
    this.pendingOf = db.prepare(sql`SELECT jti, stream_id, event_type, subject, payload, occurred_at FROM (
        SELECT d.id AS jti, d.stream_id, e.event_type, e.subject, e.payload, e.occurred_at,
          ROW_NUMBER() OVER (PARTITION BY d.stream_id ORDER BY d.created_at, d.id) AS n
        FROM ${db.table('ssf_deliveries', 'ssf_deliveries_pending', 'd')} JOIN ssf_events e ON e.id = d.event_id
        WHERE ${db.idIn('d.stream_id', 'streamIds')} AND d.acknowledged_at IS NULL
      ) pending WHERE n <= ${param('limit')} ORDER BY stream_id, n`);
    this.deliveriesOf = db.prepare(sql`DELETE FROM ssf_deliveries WHERE ${db.idIn('stream_id', 'streamIds')}`);
    // The default streams (their id is the resource server's) and the instance streams
    // (docs/adr/0031-revocation-feed-in-production.md).
    this.streams = db.prepare(sql`SELECT id FROM resource_servers UNION ALL SELECT id FROM ssf_streams`);
    const rows = db.jsonRecords('rows', 'r', [
      ['id', 'uuid'],
      ['stream_id', 'uuid'],
      ['event_id', 'uuid'],
      ['created_at', 'timestamptz'],
    ]);
    this.deliver = db.prepare(sql`INSERT INTO ssf_deliveries (id, stream_id, event_id, created_at)
      SELECT r.id, r.stream_id, r.event_id, r.created_at FROM ${rows}`);
    const events = db.jsonRecords('events', 'e', [
      ['id', 'uuid'],
      ['event_type', 'varchar'],
      ['subject', 'text'],
      ['payload', 'text'],
      ['occurred_at', 'timestamptz'],
    ]);
    this.insertEvents = db.prepare(sql`INSERT INTO ssf_events (id, event_type, subject, payload, occurred_at)
      SELECT e.id, e.event_type, e.subject, e.payload, e.occurred_at FROM ${events}`);
    const notify = db.notify(param('channel'));
    this.notify = notify === null ? null : db.prepare(notify);
    this.orphans = db.prepare(sql`DELETE FROM ssf_deliveries
      WHERE NOT EXISTS (SELECT 1 FROM resource_servers r WHERE r.id = ssf_deliveries.stream_id)
        AND NOT EXISTS (SELECT 1 FROM ssf_streams s WHERE s.id = ssf_deliveries.stream_id)`);
    this.setError = db.prepare(sql`UPDATE ssf_deliveries SET acknowledged_at = ${param('at')}, error = ${param('error')}
      WHERE stream_id = ${param('streamId')} AND id = ${param('id')}`);
    this.oldDeliveries = db.prepare(sql`DELETE FROM ssf_deliveries WHERE created_at < ${param('at')}`);
    this.oldEvents = db.prepare(sql`DELETE FROM ssf_events WHERE occurred_at < ${param('at')}`);
  }

  /** The events and a delivery of each to every stream, inside the change's transaction; a NOTIFY at its commit. */
  async insert(events: readonly SsfEvent[], tx: Transaction, channel: string): Promise<void> {
    if (events.length === 0) return;
    const streams = await this.db.run<{ id: string }>(tx, this.streams, {});
    for (let start = 0; start < events.length; start += CHUNK) {
      const records = events.slice(start, start + CHUNK).map((event) => ({
        id: event.id,
        event_type: event.eventType,
        subject: event.subject,
        payload: event.payload,
        occurred_at: event.occurredAt.toISOString(),
      }));
      await this.db.run(tx, this.insertEvents, { events: records });
    }
    // Plain records in one statement a chunk: an entity a row cost 70-100 ms a revocation at 2,000 streams.
    const deliveries = events.flatMap((event) => {
      const createdAt = event.occurredAt.toISOString();
      return streams.map((stream) => ({
        id: randomUUID(),
        stream_id: stream.id,
        event_id: event.id,
        created_at: createdAt,
      }));
    });
    for (let start = 0; start < deliveries.length; start += DELIVERY_CHUNK) {
      await this.db.run(tx, this.deliver, { rows: deliveries.slice(start, start + DELIVERY_CHUNK) });
    }
    if (this.notify !== null) await this.db.run(tx, this.notify, { channel });
  }

  /** The stream's unacknowledged SETs, oldest first. */
  async findPending(streamId: string, limit: number): Promise<PendingSet[]> {
    const rows = await this.db.rows<PendingRow, { streamId: string; limit: number }>(this.pending, { streamId, limit });
    return rows.map(toPendingSet);
  }

  /** The unacknowledged SETs of each of these streams, at most `limit` each, oldest first; a query per 500 streams. */
  async findPendingOf(streamIds: readonly string[], limit: number): Promise<Map<string, PendingSet[]>> {
    const found = new Map<string, PendingSet[]>();
    for (let start = 0; start < streamIds.length; start += STREAM_CHUNK) {
      const rows = await this.db.rows<
        PendingRow & { stream_id: string },
        { streamIds: readonly string[]; limit: number }
      >(this.pendingOf, { streamIds: streamIds.slice(start, start + STREAM_CHUNK), limit });
      for (const row of rows) {
        const sets = found.get(row.stream_id);
        if (sets === undefined) found.set(row.stream_id, [toPendingSet(row)]);
        else sets.push(toPendingSet(row));
      }
    }
    return found;
  }

  /** The deliveries of deleted streams, acknowledged or not. */
  async deleteDeliveriesOf(streamIds: readonly string[], tx: Transaction): Promise<void> {
    for (let start = 0; start < streamIds.length; start += STREAM_CHUNK) {
      await this.db.run(tx, this.deliveriesOf, { streamIds: streamIds.slice(start, start + STREAM_CHUNK) });
    }
  }

  /**
   * Deliveries whose stream is gone: a removed resource server's, or those a fan-out wrote for a stream deleted after
   * it read the stream list (deliveries have no foreign key to their stream, so such a revocation still commits).
   */
  deleteOrphans(): Promise<number> {
    return this.db.affected(this.dataSource.manager, this.orphans, {});
  }

  /** Acknowledged SETs of this stream are never delivered again (other streams' ids are left alone). */
  async acknowledgeAll(streamId: string, ids: readonly string[], at: Date): Promise<void> {
    if (ids.length === 0) return;
    await this.db.run(this.dataSource.manager, this.acknowledge, { streamId, ids, at: at.toISOString() });
  }

  /** RFC 8936 setErrs: the SET is not delivered again, and the receiver's error is kept with it. */
  async recordError(streamId: string, id: string, error: object, at: Date): Promise<void> {
    await this.db.run(this.dataSource.manager, this.setError, {
      streamId,
      id,
      error: JSON.stringify(error),
      at: at.toISOString(),
    });
  }

  /** Deletes what is older than `cutoff`: deliveries, then events no delivery needs. */
  async deleteOlderThan(cutoff: Date): Promise<number> {
    const at = cutoff.toISOString();
    const deliveries = await this.db.affected(this.dataSource.manager, this.oldDeliveries, { at });
    await this.db.run(this.dataSource.manager, this.oldEvents, { at });
    return deliveries;
  }

  /**
   * Makes `client` hear the NOTIFY that `insert` sends on `channel`: a connection of its own (WakeSignal's), since a
   * pooled one would stop listening when it went back to the pool. PostgreSQL only.
   */
  async listen(client: ClientBase, channel: string): Promise<void> {
    await client.query(this.db.prepare(sql`LISTEN ${raw(`"${channel}"`)}`).text);
  }
}
