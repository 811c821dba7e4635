import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { LIST_WINDOW } from '../common/pagination';
import { toDate } from '../database/columns';
import { Dialect, param, raw, sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import type { DeliveryStatus } from './webhook.entity';
import type { OutboxEvent } from './webhook-events';

/** One line of an endpoint's delivery log. */
export interface DeliveryRecord {
  id: string;
  eventId: string;
  eventType: string;
  status: DeliveryStatus;
  attempts: number;
  lastResponseStatus: number | null;
  lastError: string | null;
  nextAttemptAt: Date | null;
  lastAttemptAt: Date | null;
  createdAt: Date;
}

/** A delivery this instance claimed, with what it takes to send it. */
export interface ClaimedDelivery {
  id: string;
  eventId: string;
  attempts: number;
  createdAt: Date;
  webhookId: string;
  url: string;
  secretEncrypted: string;
  payload: string;
}

/** An attempt's outcome as the log keeps it; `nextAttemptAt` is null once it succeeded or failed. */
export interface AttemptRecord {
  id: string;
  claim: string;
  status: DeliveryStatus;
  nextAttemptAt: Date | null;
  at: Date;
  responseStatus: number | null;
  error: string | null;
}

type Stamp = Date | string;
type DeliveryRow = {
  id: string;
  event_id: string;
  event_type: string;
  status: DeliveryStatus;
  attempts: number | string;
  last_response_status: number | string | null;
  last_error: string | null;
  next_attempt_at: Stamp | null;
  last_attempt_at: Stamp | null;
  created_at: Stamp;
};
type ClaimedRow = {
  id: string;
  event_id: string;
  attempts: number | string;
  created_at: Stamp;
  webhook_id: string;
  url: string;
  secret_encrypted: string;
  payload: string;
};
type Ids = { ids: readonly string[] };
type LogPage = { webhookId: string; limit: number; offset: number };
type Claim = { now: string; leaseUntil: string; claim: string; limit: number };

/** Rows one INSERT writes at most. */
const CHUNK = 500;

const orNull = <T, R>(value: T | null, map: (value: T) => R): R | null => (value === null ? null : map(value));
const toDelivery = (row: DeliveryRow): DeliveryRecord => ({
  id: row.id,
  eventId: row.event_id,
  eventType: row.event_type,
  status: row.status,
  attempts: Number(row.attempts),
  lastResponseStatus: orNull(row.last_response_status, Number),
  lastError: row.last_error,
  nextAttemptAt: row.status === 'pending' ? orNull(row.next_attempt_at, toDate) : null,
  lastAttemptAt: orNull(row.last_attempt_at, toDate),
  createdAt: toDate(row.created_at),
});

/**
 * Every query on webhook_events and webhook_deliveries: the outbox's write, the claim of due deliveries, their
 * outcomes, the delivery log and retention (docs/adr/0037-signed-webhooks.md).
 */
@Injectable()
export class WebhookDeliveriesRepository {
  private readonly db: Dialect;
  private readonly insertEvents: Statement<{ rows: object[] }>;
  private readonly insertDeliveries: Statement<{ rows: object[] }>;
  private readonly page: Statement<LogPage>;
  private readonly count: Statement<{ webhookId: string }>;
  private readonly byIds: Statement<Ids>;
  private readonly ofWebhook: Statement<{ webhookId: string }>;
  private readonly due: Statement<{ now: string }>;
  private readonly claim: Statement<Claim>;
  private readonly claimed: Statement<Ids>;
  private readonly orphansOfClaim: Statement<{ claim: string }>;
  private readonly complete: Statement<Record<string, unknown>>;
  private readonly oldDeliveries: Statement<{ cutoff: string }>;
  private readonly oldEvents: Statement<{ cutoff: string }>;
  private readonly orphans: Statement<Record<string, never>>;

  constructor(@InjectDataSource() dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    const events = db.jsonRecords('rows', 'r', [
      ['id', 'uuid'],
      ['organization_id', 'uuid'],
      ['event_type', 'text'],
      ['payload', 'text'],
      ['dedupe_key', 'text'],
      ['occurred_at', 'timestamptz'],
    ]);
    // An upsert on INSERT ... SELECT: SQLite needs the WHERE to parse it. A dedupe key written before drops the event.
    this.insertEvents = db.prepare(
      db.returning(
        sql`INSERT INTO webhook_events (id, organization_id, event_type, payload, dedupe_key, occurred_at)
          SELECT r.id, r.organization_id, r.event_type, r.payload, r.dedupe_key, r.occurred_at FROM ${events} WHERE true
          ON CONFLICT (dedupe_key) DO NOTHING RETURNING id`,
        'id',
      ),
    );
    const deliveries = db.jsonRecords('rows', 'r', [
      ['id', 'uuid'],
      ['webhook_id', 'uuid'],
      ['event_id', 'uuid'],
      ['created_at', 'timestamptz'],
    ]);
    this.insertDeliveries = db.prepare(sql`INSERT INTO webhook_deliveries
        (id, webhook_id, event_id, status, attempts, next_attempt_at, created_at)
      SELECT r.id, r.webhook_id, r.event_id, 'pending', 0, r.created_at, r.created_at FROM ${deliveries}`);
    const columns = raw(`d.id, d.event_id, e.event_type, d.status, d.attempts, d.last_response_status, d.last_error,
      d.next_attempt_at, d.last_attempt_at, d.created_at`);
    const joined = raw('webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id');
    this.page = db.prepare(sql`SELECT ${columns} FROM ${joined} WHERE d.webhook_id = ${param('webhookId')}
      ORDER BY d.created_at DESC, d.id DESC LIMIT ${param('limit')} OFFSET ${param('offset')}`);
    this.count = db.prepare(sql`SELECT COUNT(*) AS count FROM (SELECT 1 FROM webhook_deliveries
      WHERE webhook_id = ${param('webhookId')} LIMIT ${raw(String(LIST_WINDOW))}) w`);
    this.byIds = db.prepare(sql`SELECT ${columns} FROM ${joined} WHERE ${db.idIn('d.id', 'ids')}`);
    this.ofWebhook = db.prepare(sql`DELETE FROM webhook_deliveries WHERE webhook_id = ${param('webhookId')}`);
    const dueNow = sql`status = 'pending' AND next_attempt_at <= ${param('now')}`;
    this.due = db.prepare(sql`SELECT id FROM webhook_deliveries WHERE ${dueNow} LIMIT 1`);
    // One instance wins each due delivery: PostgreSQL's claimers skip the rows another holds, and the condition is
    // checked again on each row they lock; the lease (next_attempt_at) lapses if the claimer dies.
    this.claim = db.prepare(
      db.returning(
        sql`UPDATE webhook_deliveries SET next_attempt_at = ${param('leaseUntil')}, claim = ${param('claim')}
          WHERE id IN (SELECT id FROM webhook_deliveries WHERE ${dueNow}
            ORDER BY next_attempt_at LIMIT ${param('limit')} ${db.skipLocked})
          AND ${dueNow} RETURNING id`,
        'id',
      ),
    );
    this.claimed = db.prepare(sql`SELECT d.id, d.event_id, d.attempts, d.created_at, d.webhook_id, w.url,
        w.secret_encrypted, e.payload
      FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN webhook_events e ON e.id = d.event_id
      WHERE ${db.idIn('d.id', 'ids')}`);
    const orphan = raw('NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.id = webhook_deliveries.webhook_id)');
    this.orphansOfClaim = db.prepare(sql`DELETE FROM webhook_deliveries WHERE claim = ${param('claim')} AND ${orphan}`);
    this.complete = db.prepare(sql`UPDATE webhook_deliveries SET status = ${param('status')},
        attempts = attempts + 1, next_attempt_at = ${param('nextAttemptAt')}, claim = NULL,
        last_attempt_at = ${param('at')}, last_response_status = ${param('responseStatus')},
        last_error = ${param('error')}
      WHERE id = ${param('id')} AND claim = ${param('claim')}`);
    const old = sql`occurred_at < ${param('cutoff')}`;
    this.oldDeliveries = db.prepare(
      sql`DELETE FROM webhook_deliveries WHERE event_id IN (SELECT id FROM webhook_events WHERE ${old})`,
    );
    this.oldEvents = db.prepare(sql`DELETE FROM webhook_events WHERE ${old}`);
    this.orphans = db.prepare(sql`DELETE FROM webhook_deliveries WHERE ${orphan}`);
  }

  /**
   * The outbox's write, inside the change's transaction: each event that has endpoints (unless its dedupe key was
   * written before) and a pending delivery of it to each; the deliveries' ids.
   */
  async enqueue(targets: ReadonlyMap<OutboxEvent, readonly string[]>, tx: Transaction): Promise<string[]> {
    const records = [...targets.keys()].map((event) => ({
      id: event.id,
      organization_id: event.organizationId,
      event_type: event.type,
      payload: event.payload,
      dedupe_key: event.dedupeKey,
      occurred_at: event.occurredAt.toISOString(),
    }));
    const written = new Set<string>();
    for (let start = 0; start < records.length; start += CHUNK) {
      const rows = await this.db.run<{ id: string }, { rows: object[] }>(tx, this.insertEvents, {
        rows: records.slice(start, start + CHUNK),
      });
      for (const row of rows) written.add(row.id);
    }
    const deliveries = [...targets].flatMap(([event, webhookIds]) =>
      written.has(event.id)
        ? webhookIds.map((webhookId) => ({
            id: randomUUID(),
            webhook_id: webhookId,
            event_id: event.id,
            created_at: event.occurredAt.toISOString(),
          }))
        : [],
    );
    for (let start = 0; start < deliveries.length; start += CHUNK) {
      await this.db.run(tx, this.insertDeliveries, { rows: deliveries.slice(start, start + CHUNK) });
    }
    return deliveries.map((delivery) => delivery.id);
  }

  /** A page of the endpoint's delivery log, newest first, and its length within the list window. */
  async findPage(webhookId: string, limit: number, offset: number): Promise<[DeliveryRecord[], number]> {
    const rows = await this.db.rows<DeliveryRow, LogPage>(this.page, { webhookId, limit, offset });
    const [{ count }] = await this.db.rows<{ count: number | string }, { webhookId: string }>(this.count, {
      webhookId,
    });
    return [rows.map(toDelivery), Number(count)];
  }

  async findByIds(ids: readonly string[]): Promise<DeliveryRecord[]> {
    return (await this.db.rows<DeliveryRow, Ids>(this.byIds, { ids })).map(toDelivery);
  }

  /** A deleted endpoint's deliveries, pending or not. */
  async deleteOfWebhook(webhookId: string, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.ofWebhook, { webhookId });
  }

  /** Whether a delivery is due now: a read without a lock, asked before a claim. */
  async anyDue(now: Date): Promise<boolean> {
    return (await this.db.rows(this.due, { now: now.toISOString() })).length > 0;
  }

  /** Claims up to `limit` due deliveries until `leaseUntil`; those of deleted endpoints are deleted instead. */
  async claimDue(
    now: Date,
    leaseUntil: Date,
    claim: string,
    limit: number,
    tx: Transaction,
  ): Promise<ClaimedDelivery[]> {
    const args: Claim = { now: now.toISOString(), leaseUntil: leaseUntil.toISOString(), claim, limit };
    const ids = await this.db.run<{ id: string }, Claim>(tx, this.claim, args);
    if (ids.length === 0) return [];
    await this.db.run(tx, this.orphansOfClaim, { claim });
    const rows = await this.db.run<ClaimedRow, Ids>(tx, this.claimed, { ids: ids.map((row) => row.id) });
    return rows.map((row) => ({
      id: row.id,
      eventId: row.event_id,
      attempts: Number(row.attempts),
      createdAt: toDate(row.created_at),
      webhookId: row.webhook_id,
      url: row.url,
      secretEncrypted: row.secret_encrypted,
      payload: row.payload,
    }));
  }

  /** An attempt's outcome, kept only while the claim is still this attempt's (a lapsed one leaves it to the next). */
  async recordAttempt(attempt: AttemptRecord, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.complete, {
      id: attempt.id,
      claim: attempt.claim,
      status: attempt.status,
      nextAttemptAt: attempt.nextAttemptAt?.toISOString() ?? null,
      at: attempt.at.toISOString(),
      responseStatus: attempt.responseStatus,
      error: attempt.error,
    });
  }

  /** Events older than `cutoff` with their deliveries, and the deliveries of endpoints that are gone. */
  async deleteOlderThan(cutoff: Date, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.oldDeliveries, { cutoff: cutoff.toISOString() });
    await this.db.run(tx, this.oldEvents, { cutoff: cutoff.toISOString() });
    await this.db.run(tx, this.orphans, {});
  }
}
