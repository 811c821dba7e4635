import { Inject, Injectable, Logger, OnApplicationShutdown } from '@nestjs/common';
import type { Request } from 'express';
import { isClientAddress } from '../common/client-address';
import { invalidArgument } from '../common/errors';
import { timeOrderedUuid } from '../common/time-ordered-uuid';
import type { Transaction } from '../database/unit-of-work';
import { AuditCursorCodec, AuditPosition } from './audit-cursor';
import { AuditAction, AuditChanges, AuditEvent } from './audit-event.entity';
import { AuditEventFilters, AuditRepository } from './audit.repository';
import { AUDIT_OBSERVER, AUDIT_WEBHOOK_OBSERVER, AuditObserver } from './observer';

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
  /** What the change changed (`api_key.updated`, `webhook.secret_rotated`): each field's before and after. */
  changes?: AuditChanges | null;
  /** The request it happened in: its id and client address are kept. */
  request?: Pick<Request, 'id' | 'ip'>;
}

/** One page of GET /v1/audit-events. */
export interface AuditEventPage {
  events: AuditEvent[];
  /** Null on the last page. */
  nextCursor: string | null;
}

/**
 * How long recordSoon's entries wait to be written together: a row costs half as much in a statement of 150 as in one
 * of 8 (the token exchange's success entries at 3,000 exchanges a second; docs/adr/0041-token-exchange-cost.md).
 */
const SOON_WRITE_MS = 50;

@Injectable()
export class AuditService implements OnApplicationShutdown {
  private readonly logger = new Logger(AuditService.name);
  private readonly observers: readonly AuditObserver[];
  /** recordSoon's entries not written yet, and the write under way. */
  private pending: AuditEvent[] = [];
  private writing: Promise<void> = Promise.resolve();
  private soon: NodeJS.Timeout | undefined;

  constructor(
    private readonly events: AuditRepository,
    private readonly cursors: AuditCursorCodec,
    // Ports that ssf and webhooks provide (their outboxes; docs/architecture.md#ports).
    @Inject(AUDIT_OBSERVER) feed: AuditObserver,
    @Inject(AUDIT_WEBHOOK_OBSERVER) webhooks: AuditObserver,
  ) {
    this.observers = [feed, webhooks];
  }

  /** Inside `tx` so the entry and its change are stored together or not at all (docs/operations.md#audit-trail). */
  async record(entry: AuditEntry, tx?: Transaction): Promise<void> {
    const event = toEvent(entry, new Date());
    await this.events.insert(event, tx);
    await this.tell([event], tx);
  }

  /** Entries of one change (a member's removal revokes each of their keys), batched per statement. */
  async recordAll(entries: readonly AuditEntry[], tx?: Transaction): Promise<void> {
    const occurredAt = new Date();
    const events = entries.map((entry) => toEvent(entry, occurredAt));
    await this.events.insertAll(events, tx);
    await this.tell(events, tx);
  }

  /**
   * An entry that is no part of a change (a successful token exchange, which changes nothing): written with the others
   * of the next SOON_WRITE_MS in one statement, after the answer; the request does not wait for it. Written at shutdown
   * too; lost only if the process dies within those milliseconds.
   */
  recordSoon(entry: AuditEntry): void {
    this.pending.push(toEvent(entry, new Date()));
    if (this.pending.length === 1) this.soon = setTimeout(() => void this.writePending(), SOON_WRITE_MS).unref();
  }

  async onApplicationShutdown(): Promise<void> {
    await this.writePending();
  }

  /** Writes what recordSoon holds now, and waits for every write under way (tests read the trail after it). */
  flush(): Promise<void> {
    return this.writePending();
  }

  private writePending(): Promise<void> {
    clearTimeout(this.soon);
    const events = this.pending;
    this.pending = [];
    this.writing = this.writing.then(async () => {
      if (events.length === 0) return;
      let written = events;
      try {
        await this.events.insertAll(events);
      } catch (error) {
        written = await this.insertEach(events, error);
      }
      try {
        await this.tell(written, undefined);
      } catch (error) {
        this.logger.error({ err: error, entries: written.length }, 'audit observers could not be told');
      }
    });
    return this.writing;
  }

  /**
   * After the statement of several organizations' entries failed: each entry on its own, so that one the database
   * refuses (or a moment's outage) does not take the others with it. What still fails is logged, without the entry.
   */
  private async insertEach(events: AuditEvent[], statementError: unknown): Promise<AuditEvent[]> {
    const written: AuditEvent[] = [];
    let lastError = statementError;
    for (const event of events) {
      try {
        await this.events.insert(event);
        written.push(event);
      } catch (error) {
        lastError = error;
      }
    }
    if (written.length < events.length) {
      const lost = events.length - written.length;
      this.logger.error({ err: lastError, entries: events.length, lost }, 'audit entries could not be written');
    }
    return written;
  }

  /** Each observer in turn, inside the entries' transaction: one that fails rolls the change back. */
  private async tell(events: readonly AuditEvent[], tx: Transaction | undefined): Promise<void> {
    for (const observer of this.observers) await observer.recorded(events, tx);
  }

  /** For the admin CLI and tests. */
  list(organizationId: string | null, limit = 100): Promise<AuditEvent[]> {
    return this.events.findNewest(organizationId, limit);
  }

  /**
   * The events of the organization that match `filters`, newest first, `batch` at a time (an export,
   * docs/api.md#exporting-audit-events: memory holds one batch whatever the range). Keyset-read as the list's pages:
   * an event written meanwhile is in it or not, none is read twice.
   */
  async *batches(organizationId: string, filters: AuditEventFilters, batch: number): AsyncGenerator<AuditEvent[]> {
    let after: AuditPosition | undefined;
    for (;;) {
      const found = await this.events.findPage(organizationId, filters, after, batch);
      if (found.length > 0) yield found.map(({ event }) => event);
      if (found.length < batch) return;
      after = found[found.length - 1].position;
    }
  }

  /** The newest event of `action` on each target, by target id (a page of revoked credentials: one read). */
  async latestOfEach(
    organizationId: string,
    action: AuditEvent['action'],
    targetIds: readonly string[],
  ): Promise<Map<string, AuditEvent>> {
    const events = await this.events.findLatestByTarget(organizationId, action, targetIds);
    return new Map(events.map((event) => [event.targetId!, event]));
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
    if (after === null) throw invalidArgument('page_cursor_invalid');
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
    id: timeOrderedUuid(occurredAt.getTime()),
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
    changes: entry.changes ?? null,
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
