import { ApiProperty } from '@nestjs/swagger';
import { PageMetaView } from '../../common/pagination';
import type { DeliveryStatus } from '../webhook.entity';
import type { DeliveryDetail, DeliveryRecord } from '../webhook-deliveries.repository';
import { MAX_RESPONSE_BYTES, RESPONSE_HEADERS } from '../webhook-sender';
import { maskEvents, TEST_EVENT, WEBHOOK_EVENT_TYPES, WebhookEventType } from '../webhook-events';
import type { WebhookRecord } from '../webhooks.repository';

/** An endpoint (docs/webhooks.md#managing-endpoints): never its secret. */
export class WebhookView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ format: 'uuid' })
  organization_id: string;
  @ApiProperty({ example: 'https://hooks.example.com/gatehouse' })
  url: string;
  @ApiProperty({ type: 'array', items: { type: 'string', enum: [...WEBHOOK_EVENT_TYPES] } })
  events: WebhookEventType[];
  @ApiProperty({ format: 'date-time' })
  created_at: string;
  @ApiProperty({
    enum: ['active', 'disabled'],
    description: 'disabled: nothing is sent to it, after too many failed attempts in a row, until it is enabled again',
  })
  status: 'active' | 'disabled';
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Since when it is disabled' })
  disabled_at: string | null;
  @ApiProperty({
    type: String,
    format: 'date-time',
    nullable: true,
    description:
      'Until when the secret the last rotation replaced still signs every delivery beside the current one; null: ' +
      'only the current secret signs',
  })
  previous_secret_expires_at: string | null;

  static from(webhook: WebhookRecord): WebhookView {
    return {
      id: webhook.id,
      organization_id: webhook.organizationId,
      url: webhook.url,
      events: maskEvents(webhook.events),
      created_at: webhook.createdAt.toISOString(),
      status: webhook.disabledAt === null ? 'active' : 'disabled',
      disabled_at: webhook.disabledAt?.toISOString() ?? null,
      previous_secret_expires_at: webhook.previousSecretExpiresAt?.toISOString() ?? null,
    };
  }
}

export class CreatedWebhookView extends WebhookView {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The signing secret: in this answer only (the creation or a rotation), and never again',
  })
  secret: string;
}

export class CreateWebhookResponse {
  @ApiProperty({ type: CreatedWebhookView })
  webhook: CreatedWebhookView;
}

export class RotateWebhookSecretResponse {
  @ApiProperty({ type: CreatedWebhookView, description: 'The endpoint with its new secret' })
  webhook: CreatedWebhookView;
}

export class WebhookResponse {
  @ApiProperty({ type: WebhookView })
  webhook: WebhookView;
}

export class WebhookListResponse extends PageMetaView {
  @ApiProperty({ type: [WebhookView] })
  webhooks: WebhookView[];
  @ApiProperty({
    description:
      'Whether this server accepts URLs on its own machine (localhost, 127.0.0.0/8, ::1; http too): true outside ' +
      'production (NODE_ENV), for local trials. Private, link-local, multicast and reserved addresses are refused ' +
      'either way (docs/webhooks.md#managing-endpoints)',
  })
  loopback_urls_allowed: boolean;
}

const STATUSES: DeliveryStatus[] = ['pending', 'succeeded', 'failed'];

/** One event for one endpoint, as its delivery log shows it (docs/webhooks.md#the-delivery-log). */
export class DeliveryView {
  @ApiProperty({ format: 'uuid' })
  id: string;
  @ApiProperty({ format: 'uuid', description: 'The webhook-id header: the same for every attempt' })
  event_id: string;
  @ApiProperty({ enum: [...WEBHOOK_EVENT_TYPES, TEST_EVENT] })
  event_type: string;
  @ApiProperty({ enum: STATUSES })
  status: DeliveryStatus;
  @ApiProperty({ type: 'integer', description: 'Attempts made so far' })
  attempts: number;
  @ApiProperty({ type: 'integer', nullable: true, description: "The last attempt's answer; null when none came" })
  last_response_status: number | null;
  @ApiProperty({
    type: String,
    nullable: true,
    description: 'Why the last attempt got no answer (e.g. timeout, connection refused, address not allowed)',
  })
  last_error: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true, description: 'Pending: the next attempt' })
  next_attempt_at: string | null;
  @ApiProperty({ type: String, format: 'date-time', nullable: true })
  last_attempt_at: string | null;
  @ApiProperty({ format: 'date-time', description: "When it was written: its event's time, or the resend's" })
  created_at: string;
  @ApiProperty({ type: String, format: 'uuid', nullable: true, description: 'The delivery this one resends' })
  resent_from: string | null;

  static from(delivery: DeliveryRecord): DeliveryView {
    return {
      id: delivery.id,
      event_id: delivery.eventId,
      event_type: delivery.eventType,
      status: delivery.status,
      attempts: delivery.attempts,
      last_response_status: delivery.lastResponseStatus,
      last_error: delivery.lastError,
      next_attempt_at: delivery.nextAttemptAt?.toISOString() ?? null,
      last_attempt_at: delivery.lastAttemptAt?.toISOString() ?? null,
      created_at: delivery.createdAt.toISOString(),
      resent_from: delivery.resentFrom,
    };
  }
}

/** What the last attempt read of its answer (docs/webhooks.md#the-delivery-log). */
export class DeliveryResponseView {
  @ApiProperty({ type: 'integer', description: 'The HTTP status' })
  status: number;
  @ApiProperty({
    type: 'object',
    additionalProperties: { type: 'string' },
    description: `The answer's headers among ${RESPONSE_HEADERS.join(', ')} (others are not kept)`,
    example: { 'content-type': 'text/plain' },
  })
  headers: Record<string, string>;
  @ApiProperty({
    description:
      `The first ${MAX_RESPONSE_BYTES} bytes of the body as text (bytes that are not UTF-8: U+FFFD); ` +
      "the endpoint's secrets, if the receiver sent them back, read [redacted]",
  })
  body: string;
  @ApiProperty({ description: 'The body was longer than what is kept' })
  body_truncated: boolean;
}

/** A delivery with what was sent and what came back (GET .../deliveries/{deliveryId}). */
export class DeliveryDetailView extends DeliveryView {
  @ApiProperty({
    description: 'The request body exactly as it is signed and sent (JSON text: type, timestamp, data)',
    example: '{"type":"webhook.test","timestamp":"2026-11-30T10:00:00.000Z","data":{}}',
  })
  payload: string;
  @ApiProperty({
    type: 'integer',
    nullable: true,
    description: 'How long the last attempt took, to its answer or its failure (ms)',
  })
  last_duration_ms: number | null;
  @ApiProperty({
    type: DeliveryResponseView,
    nullable: true,
    description: "The last attempt's answer; null when it got none (or before the first attempt)",
  })
  last_response: DeliveryResponseView | null;

  static fromDetail(delivery: DeliveryDetail): DeliveryDetailView {
    return {
      ...DeliveryView.from(delivery),
      payload: delivery.payload,
      last_duration_ms: delivery.lastDurationMs,
      last_response:
        delivery.lastResponse === null || delivery.lastResponseStatus === null
          ? null
          : {
              status: delivery.lastResponseStatus,
              headers: delivery.lastResponse.headers,
              body: delivery.lastResponse.body,
              body_truncated: delivery.lastResponse.truncated,
            },
    };
  }
}

export class DeliveryDetailResponse {
  @ApiProperty({ type: DeliveryDetailView })
  delivery: DeliveryDetailView;
}

export class DeliveryListResponse extends PageMetaView {
  @ApiProperty({ type: [DeliveryView] })
  deliveries: DeliveryView[];
}

export class DeliveryResponse {
  @ApiProperty({ type: DeliveryView })
  delivery: DeliveryView;
}
