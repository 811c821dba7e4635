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
 * tests use to verify (docs/adr/0037-signed-webhooks.md). With several secrets (a rotation's overlap: the new one
 * first, then the old), one signature each, space-separated, as the specification allows for zero-downtime rotation
 * (docs/adr/0059-delivery-answers-secret-overlap-export.md).
 */
export function signWebhook(secrets: string | readonly string[], id: string, at: Date, body: string): SignedHeaders {
  const timestamp = String(Math.floor(at.getTime() / 1000));
  const signatures = (typeof secrets === 'string' ? [secrets] : secrets).map((secret) => {
    if (!secret.startsWith(SECRET_PREFIX)) throw new Error('not a webhook secret');
    const key = Buffer.from(secret.slice(SECRET_PREFIX.length), 'base64');
    return `v1,${createHmac('sha256', key).update(`${id}.${timestamp}.${body}`, 'utf8').digest('base64')}`;
  });
  if (signatures.length === 0) throw new Error('no webhook secret');
  return { 'webhook-id': id, 'webhook-timestamp': timestamp, 'webhook-signature': signatures.join(' ') };
}

/**
 * Text a receiver sent back, with every secret of its endpoint in it (whole, or its base64 part) replaced: a receiver
 * that echoes its request or its configuration never puts a secret into the delivery log.
 */
export function redactSecrets(text: string, secrets: readonly string[]): string {
  let redacted = text;
  for (const secret of secrets) {
    for (const part of [secret, secret.slice(SECRET_PREFIX.length)]) {
      if (part.length >= 16) redacted = redacted.replaceAll(part, '[redacted]');
    }
  }
  return redacted;
}
