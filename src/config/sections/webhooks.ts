import type { Reader } from '../reader';

/** Delivery of signed webhooks (docs/webhooks.md#retries, docs/adr/0037-signed-webhooks.md, docs/adr/0045-fair-webhook-delivery.md). */
export interface WebhookSettings {
  /** How often an instance looks for due deliveries while webhooks exist (ms). */
  pollIntervalMs: number;
  /** The longest one delivery attempt may take, connection, answer and body included (ms). */
  timeoutMs: number;
  /** Attempts one instance makes at once, all organizations together. */
  concurrency: number;
  /** Attempts one instance makes at once for one organization's endpoints: the rest is for the others. */
  organizationConcurrency: number;
  /** Attempts one instance makes at once to one endpoint. */
  endpointConcurrency: number;
  /** Pending deliveries one endpoint may have: past it the oldest are dropped. */
  maxPendingPerEndpoint: number;
  /** Failed attempts in a row, with no success between them, after which an endpoint is disabled. */
  disableAfterFailures: number;
  /** Test deliveries and resends (together) one organization may ask for per minute. */
  testsPerMinute: number;
  /** Days events and their deliveries (bodies and answers included) are kept before they are pruned. */
  retentionDays: number;
}

export function parseWebhooks(r: Reader): WebhookSettings {
  return {
    pollIntervalMs: r.int('WEBHOOK_POLL_INTERVAL_MS', 1000, 100, 60000),
    timeoutMs: r.int('WEBHOOK_TIMEOUT_MS', 5000, 500, 30000),
    concurrency: r.int('WEBHOOK_CONCURRENCY', 16, 2, 256),
    organizationConcurrency: r.int('WEBHOOK_ORGANIZATION_CONCURRENCY', 4, 1, 256),
    endpointConcurrency: r.int('WEBHOOK_ENDPOINT_CONCURRENCY', 2, 1, 256),
    maxPendingPerEndpoint: r.int('WEBHOOK_MAX_PENDING_PER_ENDPOINT', 1000, 1, 100000),
    disableAfterFailures: r.int('WEBHOOK_DISABLE_AFTER_FAILURES', 50, 1, 100000),
    testsPerMinute: r.int('WEBHOOK_TESTS_PER_MINUTE', 10, 1, 10000),
    // More than the 7 days of an expiry notice, whose event must outlive its window to be sent once.
    retentionDays: r.int('WEBHOOK_RETENTION_DAYS', 30, 8, 3650),
  };
}
