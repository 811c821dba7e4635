import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { isClientAddress } from '../common/client-address';
import { invalidArgument } from '../common/errors';
import type { Transaction } from '../database/unit-of-work';
import { AuditCursorCodec } from './audit-cursor';
import { AuditAction, AuditEvent } from './audit-event.entity';
import { AuditEventFilters, AuditRepository } from './audit.repository';

export interface AuditEntry {
  action: AuditAction;
  organizationId?: string | null;
  actorUserId?: string | null;
  actorApiKeyId?: string | null;
  targetType?: AuditEvent['targetType'];
  targetId?: string | null;
  reason?: string | null;
  previousApiKeyId?: string | null;
  /** The request it happened in: its id and client address are kept. */
  request?: Pick<Request, 'id' | 'ip'>;
}

/** One page of GET /v1/audit-events. */
export interface AuditEventPage {
  events: AuditEvent[];
  /** Where the next page starts; null on the last page. */
  nextCursor: string | null;
}

/** Appends to the audit trail and reads it back. */
@Injectable()
export class AuditService {
  constructor(
    private readonly events: AuditRepository,
    private readonly cursors: AuditCursorCodec,
  ) {}

  /**
   * Stores the entry; inside `tx` when the change it records is written in that transaction, so that both are stored or
   * neither is (docs/operations.md#audit-trail).
   */
  async record(entry: AuditEntry, tx?: Transaction): Promise<void> {
    await this.events.insert(toEvent(entry, new Date()), tx);
  }

  /**
   * Stores entries of one change together (a member's removal revokes each of their keys), a few
   * hundred rows per statement, as record does one.
   */
  async recordAll(entries: readonly AuditEntry[], tx?: Transaction): Promise<void> {
    const occurredAt = new Date();
    await this.events.insertAll(
      entries.map((entry) => toEvent(entry, occurredAt)),
      tx,
    );
  }

  /** Newest first, for the admin CLI and tests. */
  list(organizationId: string | null, limit = 100): Promise<AuditEvent[]> {
    return this.events.findNewest(organizationId, limit);
  }

  /**
   * One page of the organization's events, newest first (docs/api.md#audit-events). `cursor` is a
   * `nextCursor` of this list: issued to the same organization with the same filters, else 400.
   */
  async page(
    organizationId: string,
    filters: AuditEventFilters,
    limit: number,
    cursor: string | undefined,
  ): Promise<AuditEventPage> {
    const scope = cursorScope(organizationId, filters);
    const after = cursor === undefined ? undefined : this.cursors.decode(scope, cursor);
    if (after === null) throw invalidArgument();
    // One more than the page: whether there is a next page is known without a request that finds nothing.
    const found = await this.events.findPage(organizationId, filters, after, limit + 1);
    const page = found.slice(0, limit);
    const nextCursor = found.length > limit ? this.cursors.encode(scope, page[page.length - 1].position) : null;
    return { events: page.map(({ event }) => event), nextCursor };
  }
}

function toEvent(entry: AuditEntry, occurredAt: Date): AuditEvent {
  const ip = entry.request?.ip;
  return {
    id: randomUUID(),
    occurredAt,
    action: entry.action,
    organizationId: entry.organizationId ?? null,
    actorUserId: entry.actorUserId ?? null,
    actorApiKeyId: entry.actorApiKeyId ?? null,
    targetType: entry.targetType ?? null,
    targetId: entry.targetId ?? null,
    reason: entry.reason ?? null,
    previousApiKeyId: entry.previousApiKeyId ?? null,
    // Only an IP address is kept: never text a client put in X-Forwarded-For (docs/operations.md).
    clientIp: isClientAddress(ip) ? ip : null,
    requestId: entry.request?.id ?? null,
  };
}

/**
 * What a cursor is bound to: the organization and every filter, in one fixed order, instants as
 * numbers (so `...T10:00:00Z` and `...T11:00:00+01:00` are the same filter).
 */
function cursorScope(organizationId: string, filters: AuditEventFilters): string {
  return JSON.stringify([
    organizationId,
    filters.action ?? null,
    filters.actorUserId ?? null,
    filters.targetId ?? null,
    filters.since ?? null,
    filters.until ?? null,
  ]);
}
