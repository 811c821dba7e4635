/**
 * The console's names for the webhooks' types (docs/webhooks.md), from the generated document like the others
 * (api/contract.ts): endpoints without their secret, the one creation answer that carries it, and deliveries.
 */
import type { components } from '../../../client';

type Schemas = components['schemas'];

export type Webhook = Schemas['WebhookView'];
export type CreatedWebhook = Schemas['CreatedWebhookView'];
export type WebhookEvent = Schemas['CreateWebhookDto']['events'][number];
export type WebhookDelivery = Schemas['DeliveryView'];
/** A delivery with the body sent and its last answer (GET .../deliveries/{deliveryId}). */
export type WebhookDeliveryDetail = Schemas['DeliveryDetailView'];

/** The events an endpoint may subscribe to, in catalogue order (src/webhooks/webhook-events.ts), with what each means. */
export const WEBHOOK_EVENTS: ReadonlyArray<{ name: WebhookEvent; description: string }> = [
  { name: 'api_key.created', description: 'a key was created (a rotation’s new key too)' },
  { name: 'api_key.revoked', description: 'a key was revoked, whatever the cause' },
  { name: 'api_key.expiring', description: 'a key expires soon' },
  { name: 'api_key.exposed', description: 'a key was reported exposed (and revoked)' },
  { name: 'member.removed', description: 'a member was removed from the organization' },
];
