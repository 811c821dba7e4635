import { ApiProperty } from '@nestjs/swagger';
import { PageMetaView } from '../../common/pagination';
import type { DeliveryStatus } from '../webhook.entity';
import type { DeliveryRecord } from '../webhook-deliveries.repository';
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

  static from(webhook: WebhookRecord): WebhookView {
    return {
      id: webhook.id,
      organization_id: webhook.organizationId,
      url: webhook.url,
      events: maskEvents(webhook.events),
      created_at: webhook.createdAt.toISOString(),
      status: webhook.disabledAt === null ? 'active' : 'disabled',
      disabled_at: webhook.disabledAt?.toISOString() ?? null,
    };
  }
}

export class CreatedWebhookView extends WebhookView {
  @ApiProperty({
    example: 'whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw',
    description: 'The signing secret: in the creation response only, and never again',
  })
  secret: string;
}

export class CreateWebhookResponse {
  @ApiProperty({ type: CreatedWebhookView })
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
  @ApiProperty({ format: 'date-time' })
  created_at: string;

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
    };
  }
}

export class DeliveryListResponse extends PageMetaView {
  @ApiProperty({ type: [DeliveryView] })
  deliveries: DeliveryView[];
}

export class DeliveryResponse {
  @ApiProperty({ type: DeliveryView })
  delivery: DeliveryView;
}
