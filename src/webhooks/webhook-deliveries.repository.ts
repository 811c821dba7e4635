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
  /** The delivery this one resends; null for the event's own deliveries. */
  resentFrom: string | null;
}

/** A delivery as its detail shows it: the body sent and what the last attempt read of its answer. */
export interface DeliveryDetail extends DeliveryRecord {
  /** The request body exactly as it is signed and sent. */
  payload: string;
  lastDurationMs: number | null;
  /** Null when the last attempt got no answer (or none was made). */
  lastResponse: { headers: Record<string, string>; body: string; truncated: boolean } | null;
}

/** A due delivery the dispatcher may claim: whose it is, for the per-organization and per-endpoint caps. */
export interface DueDelivery {
  id: string;
  webhookId: string;
  organizationId: string;
}

/** What a fair read of the due deliveries leaves out and how much of each organization and endpoint it takes. */
export interface FairDue {
  /** Due deliveries of one endpoint, oldest first, at most. */
  perEndpoint: number;
  /** Due deliveries of one organization at most: its endpoints taken in turn. */
  perOrganization: number;
  limit: number;
  /** Endpoints and organizations the claimer has no room for now. */
  busyEndpoints: readonly string[];
  busyOrganizations: readonly string[];
}

/** A delivery this instance claimed, with what it takes to send it. */
export interface ClaimedDelivery {
  id: string;
  eventId: string;
  attempts: number;
  createdAt: Date;
  webhookId: string;
  organizationId: string;
  url: string;
  secretEncrypted: string;
  /** A rotation's previous secret and until when it signs too (docs/webhooks.md#rotating-the-secret). */
  previousSecretEncrypted: string | null;
  previousSecretExpiresAt: Date | null;
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
  durationMs: number;
  /** What was read of the answer (secrets redacted); null without one. */
  response: { headers: Record<string, string>; body: string; truncated: boolean } | null;
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
  resent_from: string | null;
};
type DetailRow = DeliveryRow & {
  payload: string;
  last_duration_ms: number | string | null;
  last_response_headers: string | null;
  last_response_body: string | null;
  last_response_truncated: number | string;
};
type ClaimedRow = {
  id: string;
  event_id: string;
  attempts: number | string;
  created_at: Stamp;
  webhook_id: string;
  organization_id: string;
  url: string;
  secret_encrypted: string;
  previous_secret_encrypted: string | null;
  previous_secret_expires_at: Stamp | null;
  payload: string;
};
type Ids = { ids: readonly string[] };
type LogPage = { webhookId: string; limit: number; offset: number };
type Claim = { ids: readonly string[]; now: string; leaseUntil: string; claim: string };
type Fair = Omit<FairDue, 'busyEndpoints' | 'busyOrganizations'> & {
  now: string;
  busyEndpoints: readonly string[];
  busyOrganizations: readonly string[];
};
type Trim = { ids: readonly string[]; max: number };
type Scoped = { webhookId: string; id: string };
type Resend = Scoped & { newId: string; now: string };

/** `last_error` of a delivery dropped from a full outbox (docs/webhooks.md#limits). */
export const DROPPED_ERROR = 'dropped: too many pending deliveries';

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
  resentFrom: row.resent_from,
});
const toDetail = (row: DetailRow): DeliveryDetail => ({
  ...toDelivery(row),
  payload: row.payload,
  lastDurationMs: orNull(row.last_duration_ms, Number),
  lastResponse:
    row.last_response_status === null
      ? null
      : {
          headers:
            row.last_response_headers === null ? {} : (JSON.parse(row.last_response_headers) as Record<string, string>),
          body: row.last_response_body ?? '',
          truncated: Number(row.last_response_truncated) !== 0,
        },
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
  private readonly detail: Statement<Scoped>;
  private readonly resendInsert: Statement<Resend>;
  private readonly ofWebhook: Statement<{ webhookId: string }>;
  private readonly due: Statement<{ now: string }>;
  private readonly fair: Statement<Fair>;
  private readonly claimUpdate: Statement<Claim>;
  private readonly claimed: Statement<Ids>;
  private readonly complete: Statement<Record<string, unknown>>;
  private readonly trim: Statement<Trim>;
  private readonly park: Statement<{ webhookId: string }>;
  private readonly resume: Statement<{ webhookId: string; now: string }>;
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
      d.next_attempt_at, d.last_attempt_at, d.created_at, d.resent_from`);
    const joined = raw('webhook_deliveries d JOIN webhook_events e ON e.id = d.event_id');
    this.page = db.prepare(sql`SELECT ${columns} FROM ${joined} WHERE d.webhook_id = ${param('webhookId')}
      ORDER BY d.created_at DESC, d.id DESC LIMIT ${param('limit')} OFFSET ${param('offset')}`);
    this.count = db.prepare(sql`SELECT COUNT(*) AS count FROM (SELECT 1 FROM webhook_deliveries
      WHERE webhook_id = ${param('webhookId')} LIMIT ${raw(String(LIST_WINDOW))}) w`);
    this.byIds = db.prepare(sql`SELECT ${columns} FROM ${joined} WHERE ${db.idIn('d.id', 'ids')}`);
    const scopedDelivery = sql`d.id = ${param('id')} AND d.webhook_id = ${param('webhookId')}`;
    this.detail = db.prepare(sql`SELECT ${columns}, e.payload, d.last_duration_ms, d.last_response_headers,
        d.last_response_body, d.last_response_truncated
      FROM ${joined} WHERE ${scopedDelivery}`);
    // A resend: a new pending delivery of the same event to the same endpoint, due now, its 24 hours from now.
    this.resendInsert = db.prepare(
      db.returning(
        sql`INSERT INTO webhook_deliveries (id, webhook_id, event_id, status, attempts, next_attempt_at, created_at,
            resent_from)
          SELECT ${param('newId')}, d.webhook_id, d.event_id, 'pending', 0, ${param('now')}, ${param('now')}, d.id
          FROM webhook_deliveries d WHERE ${scopedDelivery} RETURNING id`,
        'id',
      ),
    );
    this.ofWebhook = db.prepare(sql`DELETE FROM webhook_deliveries WHERE webhook_id = ${param('webhookId')}`);
    const dueNow = sql`status = 'pending' AND next_attempt_at <= ${param('now')}`;
    // Due to an endpoint that is not disabled (a disabled endpoint's pending deliveries are parked anyway).
    this.due = db.prepare(sql`SELECT d.id FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
      WHERE d.status = 'pending' AND d.next_attempt_at <= ${param('now')} AND w.disabled_at IS NULL LIMIT 1`);
    // Fair to every organization (docs/adr/0045-fair-webhook-delivery.md): each endpoint's oldest due deliveries,
    // then each organization's taken from its endpoints in turn, then the organizations in turn: the first row of every
    // organization comes before the second of any. Orphans (endpoint deleted) are left to the scheduler's pruning.
    this.fair = db.prepare(sql`SELECT o.id, o.webhook_id, o.organization_id FROM (
        SELECT e.id, e.webhook_id, e.organization_id, e.next_attempt_at, ROW_NUMBER() OVER (
          PARTITION BY e.organization_id ORDER BY e.endpoint_rank, e.next_attempt_at, e.id) AS organization_rank
        FROM (
          SELECT d.id, d.webhook_id, w.organization_id, d.next_attempt_at,
            ROW_NUMBER() OVER (PARTITION BY d.webhook_id ORDER BY d.next_attempt_at, d.id) AS endpoint_rank
          FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id
          WHERE d.status = 'pending' AND d.next_attempt_at <= ${param('now')} AND w.disabled_at IS NULL
            AND NOT (${db.idIn('d.webhook_id', 'busyEndpoints')})
            AND NOT (${db.idIn('w.organization_id', 'busyOrganizations')})
        ) e WHERE e.endpoint_rank <= ${param('perEndpoint')}
      ) o WHERE o.organization_rank <= ${param('perOrganization')}
      ORDER BY o.organization_rank, o.next_attempt_at, o.id LIMIT ${param('limit')}`);
    // One instance wins each due delivery: PostgreSQL's claimers skip the rows another holds, and the condition is
    // checked again on each row they lock; the lease (next_attempt_at) lapses if the claimer dies.
    this.claimUpdate = db.prepare(
      db.returning(
        sql`UPDATE webhook_deliveries SET next_attempt_at = ${param('leaseUntil')}, claim = ${param('claim')}
          WHERE id IN (SELECT id FROM webhook_deliveries WHERE ${db.idIn('id', 'ids')} AND ${dueNow}
            ${db.skipLocked})
          AND ${dueNow} RETURNING id`,
        'id',
      ),
    );
    this.claimed = db.prepare(sql`SELECT d.id, d.event_id, d.attempts, d.created_at, d.webhook_id, w.organization_id,
        w.url, w.secret_encrypted, w.previous_secret_encrypted, w.previous_secret_expires_at, e.payload
      FROM webhook_deliveries d JOIN webhooks w ON w.id = d.webhook_id JOIN webhook_events e ON e.id = d.event_id
      WHERE ${db.idIn('d.id', 'ids')}`);
    const orphan = raw('NOT EXISTS (SELECT 1 FROM webhooks w WHERE w.id = webhook_deliveries.webhook_id)');
    this.complete = db.prepare(sql`UPDATE webhook_deliveries SET status = ${param('status')},
        attempts = attempts + 1, next_attempt_at = ${param('nextAttemptAt')}, claim = NULL,
        last_attempt_at = ${param('at')}, last_response_status = ${param('responseStatus')},
        last_error = ${param('error')}, last_duration_ms = ${param('durationMs')},
        last_response_headers = ${param('responseHeaders')}, last_response_body = ${param('responseBody')},
        last_response_truncated = ${param('responseTruncated')}
      WHERE id = ${param('id')} AND claim = ${param('claim')}`);
    // The outbox's bound (docs/webhooks.md#limits): past `max` pending deliveries of an endpoint (those in flight
    // counted), the oldest are dropped (failed, with DROPPED_ERROR); one in flight is left to its attempt. Rows another
    // transaction holds are skipped, never waited for, so that two changes trimming one endpoint cannot deadlock.
    const unclaimed = raw(`status = 'pending' AND claim IS NULL`);
    this.trim = db.prepare(
      db.returning(
        sql`UPDATE webhook_deliveries SET status = 'failed', next_attempt_at = NULL,
            last_error = ${raw(`'${DROPPED_ERROR}'`)}
          WHERE id IN (SELECT id FROM webhook_deliveries WHERE id IN (
              SELECT r.id FROM (SELECT id, claim, ROW_NUMBER() OVER (
                  PARTITION BY webhook_id ORDER BY created_at DESC, id DESC) AS newest
                FROM webhook_deliveries WHERE status = 'pending' AND ${db.idIn('webhook_id', 'ids')}) r
              WHERE r.newest > ${param('max')} AND r.claim IS NULL)
            ${db.skipLocked})
          AND ${unclaimed} RETURNING webhook_id`,
        'webhook_id',
      ),
    );
    // A disabled endpoint's pending deliveries wait without being due (no next attempt) until it is enabled again.
    this.park = db.prepare(sql`UPDATE webhook_deliveries SET next_attempt_at = NULL
      WHERE webhook_id = ${param('webhookId')} AND ${unclaimed}`);
    this.resume = db.prepare(sql`UPDATE webhook_deliveries SET next_attempt_at = ${param('now')}
      WHERE webhook_id = ${param('webhookId')} AND status = 'pending' AND next_attempt_at IS NULL`);
    const old = sql`occurred_at < ${param('cutoff')}`;
    this.oldDeliveries = db.prepare(
      sql`DELETE FROM webhook_deliveries WHERE event_id IN (SELECT id FROM webhook_events WHERE ${old})`,
    );
    this.oldEvents = db.prepare(sql`DELETE FROM webhook_events WHERE ${old}`);
    this.orphans = db.prepare(sql`DELETE FROM webhook_deliveries WHERE ${orphan}`);
  }

  /**
   * The outbox's write, inside the change's transaction: each event that has endpoints (unless its dedupe key was
   * written before) and a pending delivery of it to each; the deliveries' ids, and how many older pending deliveries
   * each endpoint dropped to stay within `maxPending`.
   */
  async enqueue(
    targets: ReadonlyMap<OutboxEvent, readonly string[]>,
    maxPending: number,
    tx: Transaction,
  ): Promise<{ written: string[]; dropped: Map<string, number> }> {
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
    const dropped = new Map<string, number>();
    if (deliveries.length > 0) {
      const ids = [...new Set(deliveries.map((delivery) => delivery.webhook_id))];
      const rows = await this.db.run<{ webhook_id: string }, Trim>(tx, this.trim, { ids, max: maxPending });
      for (const row of rows) dropped.set(row.webhook_id, (dropped.get(row.webhook_id) ?? 0) + 1);
    }
    return { written: deliveries.map((delivery) => delivery.id), dropped };
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

  /** One delivery of the endpoint with its body and last answer; undefined when the endpoint has no such delivery. */
  async findDetail(webhookId: string, id: string): Promise<DeliveryDetail | undefined> {
    const [row] = await this.db.rows<DetailRow, Scoped>(this.detail, { webhookId, id });
    return row === undefined ? undefined : toDetail(row);
  }

  /**
   * A new pending delivery of the event `id` delivered, to the same endpoint, due at `now`; its id, or undefined when
   * the endpoint has no such delivery. The outbox's bound holds as for any new delivery: past `maxPending`, the
   * endpoint's oldest pending ones are dropped (how many is returned).
   */
  async resend(
    webhookId: string,
    id: string,
    now: Date,
    maxPending: number,
    tx: Transaction,
  ): Promise<{ id: string; dropped: number } | undefined> {
    const newId = randomUUID();
    const [row] = await this.db.run<{ id: string }, Resend>(tx, this.resendInsert, {
      webhookId,
      id,
      newId,
      now: now.toISOString(),
    });
    if (row === undefined) return undefined;
    const dropped = await this.db.run<{ webhook_id: string }, Trim>(tx, this.trim, {
      ids: [webhookId],
      max: maxPending,
    });
    return { id: newId, dropped: dropped.length };
  }

  /** A deleted endpoint's deliveries, pending or not. */
  async deleteOfWebhook(webhookId: string, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.ofWebhook, { webhookId });
  }

  /** Whether a delivery is due now: a read without a lock, asked before a claim. */
  async anyDue(now: Date): Promise<boolean> {
    return (await this.db.rows(this.due, { now: now.toISOString() })).length > 0;
  }

  /**
   * Due deliveries of endpoints that are not disabled, read without a lock, taken in turn from each organization and
   * each of its endpoints (the claim decides who gets them).
   */
  async dueFairly(now: Date, fair: FairDue): Promise<DueDelivery[]> {
    const rows = await this.db.rows<{ id: string; webhook_id: string; organization_id: string }, Fair>(this.fair, {
      ...fair,
      now: now.toISOString(),
    });
    return rows.map((row) => ({ id: row.id, webhookId: row.webhook_id, organizationId: row.organization_id }));
  }

  /** Claims those of these deliveries that are still due until `leaseUntil` (another instance may have won some). */
  async claim(
    ids: readonly string[],
    now: Date,
    leaseUntil: Date,
    claim: string,
    tx: Transaction,
  ): Promise<ClaimedDelivery[]> {
    const args: Claim = { ids, now: now.toISOString(), leaseUntil: leaseUntil.toISOString(), claim };
    const won = await this.db.run<{ id: string }, Claim>(tx, this.claimUpdate, args);
    if (won.length === 0) return [];
    const rows = await this.db.run<ClaimedRow, Ids>(tx, this.claimed, { ids: won.map((row) => row.id) });
    return rows.map((row) => ({
      id: row.id,
      eventId: row.event_id,
      attempts: Number(row.attempts),
      createdAt: toDate(row.created_at),
      webhookId: row.webhook_id,
      organizationId: row.organization_id,
      url: row.url,
      secretEncrypted: row.secret_encrypted,
      previousSecretEncrypted: row.previous_secret_encrypted,
      previousSecretExpiresAt: orNull(row.previous_secret_expires_at, toDate),
      payload: row.payload,
    }));
  }

  /**
   * An attempt's outcome, kept only while the claim is still this attempt's (a lapsed one leaves it to the next);
   * whether it was kept.
   */
  async recordAttempt(attempt: AttemptRecord, tx: Transaction): Promise<boolean> {
    const kept = await this.db.affected(tx, this.complete, {
      id: attempt.id,
      claim: attempt.claim,
      status: attempt.status,
      nextAttemptAt: attempt.nextAttemptAt?.toISOString() ?? null,
      at: attempt.at.toISOString(),
      responseStatus: attempt.responseStatus,
      error: attempt.error,
      durationMs: attempt.durationMs,
      responseHeaders: attempt.response === null ? null : JSON.stringify(attempt.response.headers),
      responseBody: attempt.response?.body ?? null,
      responseTruncated: attempt.response?.truncated === true ? 1 : 0,
    });
    return kept > 0;
  }

  /** A disabled endpoint's pending deliveries stop being due (those in flight finish their attempt). */
  async parkOfWebhook(webhookId: string, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.park, { webhookId });
  }

  /** An endpoint enabled again: its parked deliveries are due now. */
  async resumeOfWebhook(webhookId: string, now: Date, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.resume, { webhookId, now: now.toISOString() });
  }

  /** Events older than `cutoff` with their deliveries, and the deliveries of endpoints that are gone. */
  async deleteOlderThan(cutoff: Date, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.oldDeliveries, { cutoff: cutoff.toISOString() });
    await this.db.run(tx, this.oldEvents, { cutoff: cutoff.toISOString() });
    await this.db.run(tx, this.orphans, {});
  }
}
