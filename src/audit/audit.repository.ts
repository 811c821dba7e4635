import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { DataSource, Repository } from 'typeorm';
import { toDate } from '../database/columns';
import { Dialect, join, Param, param, raw, sql, Sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import { AuditAction, AuditEvent } from './audit-event.entity';
import type { AuditPosition } from './audit-cursor';
import type { Micros } from './instants';

/** What a page of one organization's events is narrowed to (every field optional, all must hold). */
export interface AuditEventFilters {
  action?: AuditAction;
  actorUserId?: string;
  targetId?: string;
  since?: Micros;
  until?: Micros;
}

/** An event with its exact position in list order (occurred_at to the microsecond, then id). */
export interface PositionedAuditEvent {
  event: AuditEvent;
  position: AuditPosition;
}

/** A row of audit_events as a raw query returns it, with occurred_at in microseconds. */
interface AuditEventRow {
  id: string;
  occurred_at: Date | string;
  occurred_us: string | number;
  action: AuditAction;
  organization_id: string | null;
  actor_user_id: string | null;
  actor_api_key_id: string | null;
  target_type: AuditEvent['targetType'];
  target_id: string | null;
  previous_api_key_id: string | null;
  previous_api_key_expires_at: Date | string | null;
  reason: string | null;
  client_ip: string | null;
  request_id: string | null;
}

const COLUMNS = `id, occurred_at, action, organization_id, actor_user_id, actor_api_key_id, target_type, target_id,
  previous_api_key_id, previous_api_key_expires_at, reason, client_ip, request_id`;

/** The indexes a page reads (docs/adr/0018-audit-event-pages.md). */
const INDEX = {
  newest: 'audit_events_org_newest',
  action: 'audit_events_org_action',
  actor: 'audit_events_org_actor',
  target: 'audit_events_org_target',
} as const;

function toAuditEvent(row: AuditEventRow): AuditEvent {
  return Object.assign(new AuditEvent(), {
    id: row.id,
    occurredAt: toDate(row.occurred_at),
    action: row.action,
    organizationId: row.organization_id,
    actorUserId: row.actor_user_id,
    actorApiKeyId: row.actor_api_key_id,
    targetType: row.target_type,
    targetId: row.target_id,
    previousApiKeyId: row.previous_api_key_id,
    previousApiKeyExpiresAt: row.previous_api_key_expires_at === null ? null : toDate(row.previous_api_key_expires_at),
    reason: row.reason,
    clientIp: row.client_ip,
    requestId: row.request_id,
  });
}

/** Events one INSERT stores at most (13 parameters each: well under either database's limit). */
const INSERT_CHUNK = 500;

@Injectable()
export class AuditRepository {
  private readonly dataSource: DataSource;
  private readonly db: Dialect;
  private readonly prune: Statement<{ cutoff: string; limit: number }>;

  constructor(@InjectRepository(AuditEvent) private readonly events: Repository<AuditEvent>) {
    this.dataSource = events.manager.connection;
    this.db = Dialect.of(this.dataSource);
    // SKIP LOCKED: concurrent pruners delete different rows instead of waiting (docs/operations.md#retention).
    this.prune = this.db.prepare(sql`DELETE FROM audit_events WHERE id IN (
      SELECT id FROM audit_events WHERE occurred_at < ${param('cutoff')} ORDER BY occurred_at LIMIT ${param('limit')}
      ${this.db.skipLocked})`);
  }

  /** Inside `tx` when given: the entry is stored with the change it records, or not at all. */
  async insert(event: AuditEvent, tx?: Transaction): Promise<void> {
    await (tx?.getRepository(AuditEvent) ?? this.events).insert(event);
  }

  async insertAll(events: readonly AuditEvent[], tx?: Transaction): Promise<void> {
    const repository = tx?.getRepository(AuditEvent) ?? this.events;
    for (let start = 0; start < events.length; start += INSERT_CHUNK) {
      await repository.insert(events.slice(start, start + INSERT_CHUNK));
    }
  }

  /** Every organization's when `organizationId` is null. */
  findNewest(organizationId: string | null, limit: number): Promise<AuditEvent[]> {
    const query = this.events
      .createQueryBuilder('e')
      .orderBy('e.occurred_at', 'DESC')
      .addOrderBy('e.id', 'DESC')
      .take(limit);
    if (organizationId !== null) query.where('e.organization_id = :organizationId', { organizationId });
    return query.getMany();
  }

  /** A keyset page: never skips or repeats events as others are written or deleted (docs/api.md#audit-events). */
  async findPage(
    organizationId: string,
    filters: AuditEventFilters,
    after: AuditPosition | undefined,
    limit: number,
  ): Promise<PositionedAuditEvent[]> {
    const db = this.db;
    const args: Record<string, unknown> = { organizationId, limit };
    const conditions = [sql`organization_id = ${param('organizationId')}`];
    const condition = (name: string, value: unknown, text: (value: Param) => Sql): void => {
      args[name] = value;
      conditions.push(text(param(name)));
    };
    if (filters.action !== undefined) condition('action', filters.action, (v) => sql`action = ${v}`);
    if (filters.actorUserId !== undefined) condition('actor', filters.actorUserId, (v) => sql`actor_user_id = ${v}`);
    if (filters.targetId !== undefined) condition('target', filters.targetId, (v) => sql`target_id = ${v}`);
    if (filters.since !== undefined) condition('since', db.instant(filters.since), (v) => sql`occurred_at >= ${v}`);
    if (after === undefined) {
      if (filters.until !== undefined) condition('until', db.instant(filters.until), (v) => sql`occurred_at < ${v}`);
    } else {
      // Row-value comparison starts the index range at the position. `until` is left out: the position
      // already precedes it, and with both a database could scan from `until` up to the position.
      args.afterId = after.id;
      condition(
        'afterAt',
        db.instant(after.occurredAt),
        (v) => sql`(occurred_at, id) < (${db.cast(v, 'timestamptz')}, ${db.cast(param('afterId'), 'uuid')})`,
      );
    }
    const index =
      filters.targetId !== undefined
        ? INDEX.target
        : filters.actorUserId !== undefined
          ? INDEX.actor
          : filters.action !== undefined
            ? INDEX.action
            : INDEX.newest;
    // occurred_us: PostgreSQL keeps microseconds, which the driver's Date drops.
    const statement = db.prepare(sql`SELECT ${raw(COLUMNS)}, ${db.epochMicros('occurred_at')} AS occurred_us
      FROM ${db.table('audit_events', index)} WHERE ${join(conditions, ' AND ')}
      ORDER BY occurred_at DESC, id DESC LIMIT ${param('limit')}`);
    const rows = await db.rows<AuditEventRow, Record<string, unknown>>(statement, args);
    return rows.map((row) => {
      const event = toAuditEvent(row);
      return { event, position: { occurredAt: Number(row.occurred_us), id: row.id } };
    });
  }

  /** Returns how many it deleted; fewer than `limit` means nothing older is left or another instance has it. */
  async deleteOlderThan(cutoff: Date, limit: number): Promise<number> {
    const runner = this.dataSource.createQueryRunner();
    try {
      const result = await runner.query(
        this.prune.text,
        this.prune.values({ cutoff: cutoff.toISOString(), limit }),
        true,
      );
      return result.affected ?? 0;
    } finally {
      await runner.release();
    }
  }
}
