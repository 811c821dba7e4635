import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import type { Request } from 'express';
import { isClientAddress } from '../common/client-address';
import type { Transaction } from '../database/unit-of-work';
import { AuditAction, AuditEvent } from './audit-event.entity';
import { AuditRepository } from './audit.repository';

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

/** Appends to the audit trail. The caller awaits it: an entry is stored before the answer goes out. */
@Injectable()
export class AuditService {
  constructor(private readonly events: AuditRepository) {}

  /**
   * Stores the entry; inside `tx` when the change it records is written in that transaction, so that
   * both are stored or neither is (docs/operations.md#audit-trail).
   */
  async record(entry: AuditEntry, tx?: Transaction): Promise<void> {
    const ip = entry.request?.ip;
    const event: AuditEvent = {
      id: randomUUID(),
      occurredAt: new Date(),
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
    await this.events.insert(event, tx);
  }

  /** Newest first, for the admin CLI and tests. */
  list(organizationId: string | null, limit = 100): Promise<AuditEvent[]> {
    return this.events.findNewest(organizationId, limit);
  }
}
