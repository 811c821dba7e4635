import { AppError, ErrorReason } from '../common/errors';
import { outboundUrlProblem } from '../common/address-rules';
import { WEBHOOK_EVENT_TYPES } from './webhook-events';

/** The exact messages of a refused webhook (docs/webhooks.md#managing-endpoints). */
export const WebhookMessages = {
  urlInvalid: 'webhook url must be an absolute http or https URL of at most 2048 characters',
  urlCredentials: 'webhook url must not contain a user name or password',
  urlNotHttps: 'webhook url must use https',
  urlAddress: 'webhook url must not point to a private, loopback, link-local, multicast or reserved address',
  eventsInvalid: `events must be a non-empty list of distinct events among ${WEBHOOK_EVENT_TYPES.join(', ')}`,
  limitReached: 'webhook limit reached',
  notFound: 'webhook not found',
  disabled: 'webhook is disabled',
} as const;

export const MAX_URL_LENGTH = 2048;

const refused = (reason: ErrorReason, message: string): AppError => new AppError(reason, { message });

/**
 * The URL as it will be called, or a 400 that says what is wrong: https (http only to loopback outside production),
 * no credentials, and no IP literal or `localhost` that the delivery would refuse anyway. A host name is resolved and
 * checked at every delivery (docs/adr/0037-signed-webhooks.md#ssrf-rule).
 */
export function checkWebhookUrl(raw: string, production: boolean): string {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw refused('webhook_url_invalid', WebhookMessages.urlInvalid);
  }
  if (raw.length > MAX_URL_LENGTH || !['http:', 'https:'].includes(url.protocol) || url.hostname === '') {
    throw refused('webhook_url_invalid', WebhookMessages.urlInvalid);
  }
  if (url.username !== '' || url.password !== '') throw refused('webhook_url_invalid', WebhookMessages.urlCredentials);
  const problem = outboundUrlProblem(url, production);
  if (problem === 'not_https') throw refused('webhook_url_not_https', WebhookMessages.urlNotHttps);
  if (problem === 'address') throw refused('webhook_url_address_not_allowed', WebhookMessages.urlAddress);
  url.hash = '';
  return url.href;
}
