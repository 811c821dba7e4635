import type { Transaction } from '../database/unit-of-work';
import type { AuditEvent } from './audit-event.entity';

/**
 * Told of every audit entry inside the transaction that stores it, so that what follows from a change (the revocation
 * feed's events, the webhooks' deliveries) commits with it or not at all. A port: ssf and webhooks each provide one
 * (docs/architecture.md#ports, docs/adr/0030-revocation-feed.md, docs/adr/0037-signed-webhooks.md).
 */
export interface AuditObserver {
  recorded(events: readonly AuditEvent[], tx: Transaction | undefined): Promise<void>;
}

/** The revocation feed's outbox; ssf provides it. */
export const AUDIT_OBSERVER = Symbol('AUDIT_OBSERVER');
/** The webhooks' outbox; webhooks provides it. Nest has no multi-provider: one token per observer, told in this order. */
export const AUDIT_WEBHOOK_OBSERVER = Symbol('AUDIT_WEBHOOK_OBSERVER');
