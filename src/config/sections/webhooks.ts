import type { Reader } from '../reader';

/** Delivery of signed webhooks (docs/webhooks.md#retries, docs/adr/0037-signed-webhooks.md). */
export interface WebhookSettings {
  /** How often an instance looks for due deliveries while webhooks exist (ms). */
  pollIntervalMs: number;
  /** The longest one delivery attempt may take, connection, answer and body included (ms). */
  timeoutMs: number;
}

export function parseWebhooks(r: Reader): WebhookSettings {
  return {
    pollIntervalMs: r.int('WEBHOOK_POLL_INTERVAL_MS', 1000, 100, 60000),
    timeoutMs: r.int('WEBHOOK_TIMEOUT_MS', 5000, 500, 30000),
  };
}
