import { createHmac, randomBytes } from 'node:crypto';

/** Standard Webhooks' secret prefix: what follows is the base64 of the key (docs/webhooks.md#verifying). */
export const SECRET_PREFIX = 'whsec_';
const SECRET_BYTES = 24;

/** A new endpoint secret: `whsec_` and the base64 of 24 random bytes. */
export function newWebhookSecret(): string {
  return SECRET_PREFIX + randomBytes(SECRET_BYTES).toString('base64');
}

/** The three headers of a Standard Webhooks request. */
export interface SignedHeaders {
  'webhook-id': string;
  'webhook-timestamp': string;
  'webhook-signature': string;
}

/**
 * Signs exactly as Standard Webhooks specifies: `v1,` and the base64 HMAC-SHA256 of `<id>.<timestamp>.<body>` keyed
 * with the secret's decoded bytes, the timestamp in whole seconds. On node:crypto rather than the library, which the
 * tests use to verify (docs/adr/0037-signed-webhooks.md).
 */
export function signWebhook(secret: string, id: string, at: Date, body: string): SignedHeaders {
  if (!secret.startsWith(SECRET_PREFIX)) throw new Error('not a webhook secret');
  const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const signature = createHmac('sha256', key).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': `v1,${signature}` };
}
