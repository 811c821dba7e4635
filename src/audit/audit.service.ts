import { randomUUID } from 'node:crypto';
import { Inject, Injectable, Optional } from '@nestjs/common';
import type { Request } from 'express';
import { isClientAddress } from '../common/client-address';
import { invalidArgument } from '../common/errors';
import type { Transaction } from '../database/unit-of-work';
import { AuditCursorCodec } from './audit-cursor';
import { AuditAction, AuditEvent } from './audit-event.entity';
import { AuditEventFilters, AuditRepository } from './audit.repository';
import { AUDIT_OBSERVER, AuditObserver } from './observer';

export interface AuditEntry {
  action: AuditAction;
  organizationId?: string | null;
  actorUserId?: string | null;
  actorApiKeyId?: string | null;
  targetType?: AuditEvent['targetType'];
  targetId?: string | null;
  reason?: string | null;
  previousApiKeyId?: string | null;
  previousApiKeyExpiresAt?: Date | null;
  /** The request it happened in: its id and client address are kept. */
  request?: Pick<Request, 'id' | 'ip'>;
}

/** One page of GET /v1/audit-events. */
export interface AuditEventPage {
  events: AuditEvent[];
  /** Null on the last page. */
  nextCursor: string | null;
}

@Injectable()
export class AuditService {
  constructor(
    private readonly events: AuditRepository,
    private readonly cursors: AuditCursorCodec,
    // A port that ssf provides (the revocation feed's outbox; docs/architecture.md#ports).
    @Optional() @Inject(AUDIT_OBSERVER) private readonly observer?: AuditObserver,
  ) {}

  /** Inside `tx` so the entry and its change are stored together or not at all (docs/operations.md#audit-trail). */
  async record(entry: AuditEntry, tx?: Transaction): Promise<void> {
    const event = toEvent(entry, new Date());
    await this.events.insert(event, tx);
    await this.observer?.recorded([event], tx);
  }

  /** Entries of one change (a member's removal revokes each of their keys), batched per statement. */
  async recordAll(entries: readonly AuditEntry[], tx?: Transaction): Promise<void> {
    const occurredAt = new Date();
    const events = entries.map((entry) => toEvent(entry, occurredAt));
    await this.events.insertAll(events, tx);
    await this.observer?.recorded(events, tx);
  }

  /** For the admin CLI and tests. */
  list(organizationId: string | null, limit = 100): Promise<AuditEvent[]> {
    return this.events.findNewest(organizationId, limit);
  }

  /** `cursor` must come from this organization with the same filters, else 400 (docs/api.md#audit-events). */
  async page(
    organizationId: string,
    filters: AuditEventFilters,
    limit: number,
    cursor: string | undefined,
  ): Promise<AuditEventPage> {
    const scope = cursorScope(organizationId, filters);
    const after = cursor === undefined ? undefined : this.cursors.decode(scope, cursor);
    if (after === null) throw invalidArgument();
    // One extra row tells whether a next page exists.
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
    previousApiKeyExpiresAt: entry.previousApiKeyExpiresAt ?? null,
    // Only an IP address is kept: never text a client put in X-Forwarded-For (docs/operations.md).
    clientIp: isClientAddress(ip) ? ip : null,
    requestId: entry.request?.id ?? null,
  };
}

/** Instants as numbers, so `...T10:00:00Z` and `...T11:00:00+01:00` are the same filter. */
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
