import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EntityRows, RawRow } from '../database/entity-rows';
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

/** The indexes a page reads (docs/adr/0018-audit-event-pages.md). */
const INDEX = {
  newest: 'audit_events_org_newest',
  action: 'audit_events_org_action',
  actor: 'audit_events_org_actor',
  target: 'audit_events_org_target',
} as const;

/** Events one INSERT stores at most (one JSON argument, about 400 bytes an event). */
const INSERT_CHUNK = 500;

/** An event as a record of the insert's JSON argument: column names, timestamps as ISO 8601 text. */
type EventRecord = RawRow;

type NewestArgs = { organizationId?: string; limit: number };

type LatestByTargetArgs = { organizationId: string; action: AuditAction; targetIds: readonly string[] };

@Injectable()
export class AuditRepository {
  private readonly db: Dialect;
  private readonly prune: Statement<{ cutoff: string; limit: number }>;
  private readonly insertEvents: Statement<{ events: EventRecord[] }>;
  private readonly newest: { all: Statement<NewestArgs>; organization: Statement<NewestArgs> };
  private readonly latestByTarget: Statement<LatestByTargetArgs>;

  /** audit_events as AuditEvent describes it: the column list and the row mapping. */
  private readonly rows: EntityRows<AuditEvent>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    this.db = Dialect.of(dataSource);
    this.rows = EntityRows.of(dataSource, AuditEvent);
    const COLUMNS = this.rows.columns;
    // SKIP LOCKED: concurrent pruners delete different rows instead of waiting (docs/operations.md#retention).
    this.prune = this.db.prepare(sql`DELETE FROM audit_events WHERE id IN (
      SELECT id FROM audit_events WHERE occurred_at < ${param('cutoff')} ORDER BY occurred_at LIMIT ${param('limit')}
      ${this.db.skipLocked})`);
    const events = this.db.jsonRecords('events', 'e', [
      ['id', 'uuid'],
      ['occurred_at', 'timestamptz'],
      ['action', 'varchar'],
      ['organization_id', 'uuid'],
      ['actor_user_id', 'uuid'],
      ['actor_api_key_id', 'uuid'],
      ['target_type', 'varchar'],
      ['target_id', 'uuid'],
      ['previous_api_key_id', 'uuid'],
      ['previous_api_key_expires_at', 'timestamptz'],
      ['reason', 'varchar'],
      ['client_ip', 'varchar'],
      ['request_id', 'varchar'],
      ['changes', 'text'],
    ]);
    this.insertEvents = this.db.prepare(
      sql`INSERT INTO audit_events (${raw(COLUMNS)}) SELECT ${raw(COLUMNS)} FROM ${events}`,
    );
    const newest = (scope: Sql): Statement<NewestArgs> =>
      this.db.prepare(sql`SELECT ${raw(COLUMNS)} FROM audit_events ${scope}
        ORDER BY occurred_at DESC, id DESC LIMIT ${param('limit')}`);
    this.newest = {
      all: newest(raw('')),
      organization: newest(sql`WHERE organization_id = ${param('organizationId')}`),
    };
    // Each target's newest event of the action, read through the target index (a revoked credential has one).
    this.latestByTarget = this.db.prepare(sql`SELECT ${raw(COLUMNS)} FROM (
        SELECT ${raw(COLUMNS)}, ROW_NUMBER() OVER (PARTITION BY target_id ORDER BY occurred_at DESC, id DESC) AS n
        FROM ${this.db.table('audit_events', INDEX.target)}
        WHERE organization_id = ${param('organizationId')} AND ${this.db.idIn('target_id', 'targetIds')}
          AND action = ${param('action')}
      ) ranked WHERE n = 1`);
  }

  /** Inside `tx` when given: the entry is stored with the change it records, or not at all. */
  insert(event: AuditEvent, tx?: Transaction): Promise<void> {
    return this.insertAll([event], tx);
  }

  async insertAll(events: readonly AuditEvent[], tx?: Transaction): Promise<void> {
    for (let start = 0; start < events.length; start += INSERT_CHUNK) {
      const records = events.slice(start, start + INSERT_CHUNK).map((event) => this.rows.toRecord(event));
      await this.db.run(tx ?? this.dataSource.manager, this.insertEvents, { events: records });
    }
  }

  /** Every organization's when `organizationId` is null. */
  async findNewest(organizationId: string | null, limit: number): Promise<AuditEvent[]> {
    const rows =
      organizationId === null
        ? await this.db.rows<RawRow, NewestArgs>(this.newest.all, { limit })
        : await this.db.rows<RawRow, NewestArgs>(this.newest.organization, { organizationId, limit });
    return rows.map(this.rows.toEntity);
  }

  /** The newest event of `action` on each of the targets that has one: one statement for a page of credentials. */
  async findLatestByTarget(
    organizationId: string,
    action: AuditAction,
    targetIds: readonly string[],
  ): Promise<AuditEvent[]> {
    if (targetIds.length === 0) return [];
    const rows = await this.db.rows<RawRow, LatestByTargetArgs>(this.latestByTarget, {
      organizationId,
      action,
      targetIds,
    });
    return rows.map(this.rows.toEntity);
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
    const statement = db.prepare(sql`SELECT ${raw(this.rows.columns)}, ${db.epochMicros('occurred_at')} AS occurred_us
      FROM ${db.table('audit_events', index)} WHERE ${join(conditions, ' AND ')}
      ORDER BY occurred_at DESC, id DESC LIMIT ${param('limit')}`);
    const rows = await db.rows<RawRow & { occurred_us: string | number }, Record<string, unknown>>(statement, args);
    return rows.map((row) => {
      const event = this.rows.toEntity(row);
      return { event, position: { occurredAt: Number(row.occurred_us), id: event.id } };
    });
  }

  /** Returns how many it deleted; fewer than `limit` means nothing older is left or another instance has it. */
  async deleteOlderThan(cutoff: Date, limit: number): Promise<number> {
    return this.db.affected(this.dataSource.manager, this.prune, { cutoff: cutoff.toISOString(), limit });
  }
}
