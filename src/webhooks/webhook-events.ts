import { randomUUID } from 'node:crypto';
import type { AuditEvent } from '../audit/audit-event.entity';

/** The events an endpoint may subscribe to, in catalogue order (docs/webhooks.md#events). */
export const WEBHOOK_EVENT_TYPES = [
  'api_key.created',
  'api_key.revoked',
  'api_key.expiring',
  'api_key.exposed',
  'member.removed',
] as const;
export type WebhookEventType = (typeof WEBHOOK_EVENT_TYPES)[number];

/** `POST /v1/organization/webhooks/{id}/test`: sent to that endpoint only, whatever it subscribes to. */
export const TEST_EVENT = 'webhook.test';

export function isWebhookEventType(value: string): value is WebhookEventType {
  return (WEBHOOK_EVENT_TYPES as readonly string[]).includes(value);
}

/** An endpoint's events as a bit mask, each event's bit its place in the catalogue (a bit never changes meaning). */
export function eventMask(types: Iterable<WebhookEventType>): number {
  let mask = 0;
  for (const type of types) mask |= 1 << WEBHOOK_EVENT_TYPES.indexOf(type);
  return mask;
}

export function maskEvents(mask: number): WebhookEventType[] {
  return WEBHOOK_EVENT_TYPES.filter((_, bit) => (mask & (1 << bit)) !== 0);
}

/** An event to write to the outbox: the body is built once, and every attempt to every endpoint sends it as it is. */
export interface OutboxEvent {
  id: string;
  organizationId: string;
  type: WebhookEventType | typeof TEST_EVENT;
  /** `{ type, timestamp, data }` as Standard Webhooks recommends; never a secret. */
  payload: string;
  /** Written once only: a second event with the same key is dropped (the expiring notices). */
  dedupeKey: string | null;
  occurredAt: Date;
  /** Only this endpoint (the test event); otherwise every endpoint of the organization that subscribes to `type`. */
  webhookId?: string;
}

export function outboxEvent(
  type: OutboxEvent['type'],
  organizationId: string,
  occurredAt: Date,
  data: Record<string, unknown>,
  options: Pick<OutboxEvent, 'dedupeKey' | 'webhookId'> = { dedupeKey: null },
): OutboxEvent {
  const payload = JSON.stringify({ type, timestamp: occurredAt.toISOString(), data });
  return { id: randomUUID(), organizationId, type, payload, occurredAt, ...options };
}

/**
 * The webhook events an audit entry stands for (docs/webhooks.md#events): a key's creation (a rotation's new key
 * too), its revocation whatever the cause (a rotation's grace ends it later: `effective_at`), an exposure (revoked as
 * well), a member's removal.
 */
export function eventsOfAuditEntry(entry: AuditEvent): OutboxEvent[] {
  const organizationId = entry.organizationId;
  const targetId = entry.targetId;
  if (organizationId === null || targetId === null) return [];
  const at = entry.occurredAt;
  const event = (type: WebhookEventType, data: Record<string, unknown>): OutboxEvent =>
    outboxEvent(type, organizationId, at, { organization_id: organizationId, ...data });
  const revoked = (apiKeyId: string, reason: string, effectiveAt: Date): OutboxEvent =>
    event('api_key.revoked', {
      api_key_id: apiKeyId,
      reason,
      actor_user_id: entry.actorUserId,
      effective_at: effectiveAt.toISOString(),
    });
  if (entry.action === 'api_key.created') {
    return [event('api_key.created', { api_key_id: targetId, user_id: entry.actorUserId, previous_api_key_id: null })];
  }
  if (entry.action === 'api_key.rotated') {
    const created = event('api_key.created', {
      api_key_id: targetId,
      user_id: entry.actorUserId,
      previous_api_key_id: entry.previousApiKeyId,
    });
    // Without a grace period the old key's revocation is an entry of its own (reason `rotated`).
    const graceEnd = entry.previousApiKeyExpiresAt;
    if (graceEnd === null || entry.previousApiKeyId === null) return [created];
    return [created, revoked(entry.previousApiKeyId, 'rotated', graceEnd)];
  }
  if (entry.action === 'api_key.revoked') {
    const revocation = revoked(targetId, entry.reason ?? 'revoked', at);
    if (entry.reason !== 'exposed') return [revocation];
    return [event('api_key.exposed', { api_key_id: targetId }), revocation];
  }
  if (entry.action === 'member.removed') return [event('member.removed', { user_id: targetId })];
  // Every other action stands for no webhook event.
  return [];
}
