import { Column, Entity, PrimaryColumn } from 'typeorm';
import { TimestampColumn } from '../database/columns';

/** An organization's endpoint (migration 1765400000000); its secret is sealed (integrations/credential-cipher.ts). */
@Entity({ name: 'webhooks' })
export class Webhook {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @Column({ type: 'varchar', length: 2048 })
  url: string;

  /** The events it receives, as a bit mask (webhook-events.ts). */
  @Column({ type: 'integer' })
  events: number;

  /** `whsec_…`, sealed: `v1:<key id>:<iv>:<ciphertext>:<tag>`. Never shown after the creation response. */
  @Column({ name: 'secret_encrypted', type: 'text' })
  secretEncrypted: string;

  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  /** Failed attempts since its last success (migration 1765830000000): at WEBHOOK_DISABLE_AFTER_FAILURES it is disabled. */
  @Column({ name: 'consecutive_failures', type: 'integer', default: 0 })
  consecutiveFailures: number;

  /** Since when it is disabled (nothing is sent to it until an admin enables it again); null while active. */
  @TimestampColumn({ name: 'disabled_at', nullable: true })
  disabledAt: Date | null;

  /**
   * The secret a rotation replaced (migration 1765920000000), sealed as `secret_encrypted` is: it signs beside the new
   * one until `previous_secret_expires_at`, then it is cleared (docs/webhooks.md#rotating-the-secret).
   */
  @Column({ name: 'previous_secret_encrypted', type: 'text', nullable: true })
  previousSecretEncrypted: string | null;

  @TimestampColumn({ name: 'previous_secret_expires_at', nullable: true })
  previousSecretExpiresAt: Date | null;
}

/** One event, as every subscribed endpoint of its organization receives it: written in the change's transaction. */
@Entity({ name: 'webhook_events' })
export class WebhookEvent {
  /** The `webhook-id` header: the same for every attempt and every endpoint. */
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'organization_id', type: 'varchar', length: 36 })
  organizationId: string;

  @Column({ name: 'event_type', type: 'varchar', length: 64 })
  eventType: string;

  /** The request body exactly as it is signed and sent: `{ type, timestamp, data }`. */
  @Column({ type: 'text' })
  payload: string;

  /** Set on events that must be written once only (`api_key.expiring`: the key and the notice). */
  @Column({ name: 'dedupe_key', type: 'varchar', length: 128, nullable: true })
  dedupeKey: string | null;

  @TimestampColumn({ name: 'occurred_at' })
  occurredAt: Date;
}

export type DeliveryStatus = 'pending' | 'succeeded' | 'failed';

/** One event for one endpoint, retried until answered 2xx or 24 hours have passed (docs/webhooks.md#retries). */
@Entity({ name: 'webhook_deliveries' })
export class WebhookDelivery {
  @PrimaryColumn({ type: 'varchar', length: 36 })
  id: string;

  @Column({ name: 'webhook_id', type: 'varchar', length: 36 })
  webhookId: string;

  @Column({ name: 'event_id', type: 'varchar', length: 36 })
  eventId: string;

  @Column({ type: 'varchar', length: 16 })
  status: DeliveryStatus;

  @Column({ type: 'integer' })
  attempts: number;

  /** Pending: when it is due, or when the claim of the instance attempting it lapses. */
  @TimestampColumn({ name: 'next_attempt_at', nullable: true })
  nextAttemptAt: Date | null;

  /** The attempt in flight: only the instance that claimed it records its outcome. */
  @Column({ type: 'varchar', length: 36, nullable: true })
  claim: string | null;

  @TimestampColumn({ name: 'last_attempt_at', nullable: true })
  lastAttemptAt: Date | null;

  @Column({ name: 'last_response_status', type: 'integer', nullable: true })
  lastResponseStatus: number | null;

  @Column({ name: 'last_error', type: 'varchar', length: 200, nullable: true })
  lastError: string | null;

  /** When it was written: the event's time, or the resend's (docs/webhooks.md#the-delivery-log). */
  @TimestampColumn({ name: 'created_at' })
  createdAt: Date;

  /** The delivery this one resends (migration 1765920000000); null for the event's own deliveries. */
  @Column({ name: 'resent_from', type: 'varchar', length: 36, nullable: true })
  resentFrom: string | null;

  /** How long the last attempt took, to its answer or its failure (ms). */
  @Column({ name: 'last_duration_ms', type: 'integer', nullable: true })
  lastDurationMs: number | null;

  /** The last answer's headers of RESPONSE_HEADERS (webhook-sender.ts), as a JSON object; null without an answer. */
  @Column({ name: 'last_response_headers', type: 'text', nullable: true })
  lastResponseHeaders: string | null;

  /** The first MAX_RESPONSE_BYTES of the last answer's body as text, any secret of the endpoint redacted. */
  @Column({ name: 'last_response_body', type: 'text', nullable: true })
  lastResponseBody: string | null;

  /** The last answer's body was longer than what is kept. */
  @Column({ name: 'last_response_truncated', type: 'integer', default: 0, transformer: { to: Number, from: Boolean } })
  lastResponseTruncated: boolean;
}
