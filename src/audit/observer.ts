import type { Transaction } from '../database/unit-of-work';
import type { AuditEvent } from './audit-event.entity';

/**
 * Told of every audit entry inside the transaction that stores it, so that what follows from a change (the revocation
 * feed's events) commits with it or not at all. A port: ssf provides it (docs/architecture.md#ports,
 * docs/adr/0030-revocation-feed.md).
 */
export interface AuditObserver {
  recorded(events: readonly AuditEvent[], tx: Transaction | undefined): Promise<void>;
}

export const AUDIT_OBSERVER = Symbol('AUDIT_OBSERVER');
