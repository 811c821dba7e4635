import { IncomingMessage, request as httpRequest, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { addressKind, guardedLookup, mayConnectTo } from '../common/address-rules';

/**
 * At most this much of an answer's body is read and kept for the delivery log (a byte more tells that there was more);
 * the answer's status is all that counts for the delivery.
 */
export const MAX_RESPONSE_BYTES = 4096;

/**
 * The answer's headers the delivery log keeps (docs/webhooks.md#the-delivery-log): what helps to tell why a receiver
 * answered as it did, never a cookie or an authentication header. Each value cut to MAX_HEADER_LENGTH characters.
 */
export const RESPONSE_HEADERS = [
  'content-type',
  'content-length',
  'date',
  'server',
  'retry-after',
  'location',
  'x-request-id',
] as const;
const MAX_HEADER_LENGTH = 256;

/** What an attempt read of its answer. */
export interface ReceivedResponse {
  /** Those of RESPONSE_HEADERS the answer had. */
  headers: Record<string, string>;
  /** The first MAX_RESPONSE_BYTES of the body as UTF-8 text (a byte that is not: U+FFFD, as is NUL). */
  body: string;
  /** The body was longer than what was read. */
  truncated: boolean;
}

/** One attempt's outcome, as the delivery log keeps it. */
export interface AttemptOutcome {
  /** Answered 2xx. */
  delivered: boolean;
  /** The answer's status, null when there was none (no connection, time-out before the status line). */
  status: number | null;
  /** Why it failed without an answer, in a few words; null when it was answered. */
  error: string | null;
  /** What was read of the answer; null when there was none. */
  response: ReceivedResponse | null;
  /** From the start of the attempt to its answer's end (or its failure), in whole milliseconds. */
  durationMs: number;
}

function keptHeaders(headers: IncomingMessage['headers']): Record<string, string> {
  const kept: Record<string, string> = {};
  for (const name of RESPONSE_HEADERS) {
    const value = headers[name];
    if (value === undefined) continue;
    kept[name] = (Array.isArray(value) ? value.join(', ') : value).slice(0, MAX_HEADER_LENGTH);
  }
  return kept;
}

/** Bytes as text a database keeps: invalid UTF-8 and NUL (which PostgreSQL's text refuses) as U+FFFD. */
function bodyText(bytes: Buffer): string {
  return bytes.toString('utf8').replaceAll('\u0000', '\uFFFD');
}

const unanswered = (error: string): AttemptOutcome => ({
  delivered: false,
  status: null,
  error,
  response: null,
  durationMs: 0,
});

export interface WebhookRequest {
  url: string;
  headers: Record<string, string>;
  body: string;
}

/** An error without an answer, in words that name no URL and no secret. */
function describe(error: unknown): string {
  const code = (error as { code?: unknown }).code;
  switch (code) {
    case 'EADDRREFUSED':
      return 'address not allowed';
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'ECONNRESET':
    case 'EPIPE':
      return 'connection reset';
    default:
      return typeof code === 'string' ? `network error (${code.slice(0, 64)})` : 'network error';
  }
}

/**
 * Sends one signed request (docs/webhooks.md): POST, no redirect followed, no connection kept, at most `timeoutMs` in
 * all. Never rejects: every failure is an outcome.
 */
export class WebhookSender {
  private readonly lookup: LookupFunction;

  constructor(
    private readonly timeoutMs: number,
    private readonly allowLoopback: boolean,
  ) {
    this.lookup = guardedLookup(allowLoopback);
  }

  send(webhook: WebhookRequest, signal?: AbortSignal): Promise<AttemptOutcome> {
    let url: URL;
    try {
      url = new URL(webhook.url);
    } catch {
      return Promise.resolve(unanswered('invalid url'));
    }
    // An IP address in the URL is connected to without a lookup: it is checked here.
    if (addressKind(url.hostname) !== undefined && !mayConnectTo(url.hostname, this.allowLoopback)) {
      return Promise.resolve(unanswered('address not allowed'));
    }
    const started = performance.now();
    return new Promise((settle) => {
      let status: number | null = null;
      let headers: Record<string, string> = {};
      const chunks: Buffer[] = [];
      let received = 0;
      let done = false;
      const finish = (error: string | null): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        request.destroy();
        const answered = status !== null;
        const kept = Buffer.concat(chunks);
        settle({
          delivered: answered && status! >= 200 && status! < 300,
          status,
          error: answered ? null : error,
          response: answered ? { headers, body: bodyText(kept), truncated: received > kept.length } : null,
          durationMs: Math.round(performance.now() - started),
        });
      };
      const timer = setTimeout(() => finish('timeout'), this.timeoutMs);
      const aborted = (): void => finish('aborted');
      signal?.addEventListener('abort', aborted, { once: true });
      const options: RequestOptions = {
        method: 'POST',
        agent: false,
        lookup: this.lookup,
        headers: {
          'content-type': 'application/json',
          'content-length': String(Buffer.byteLength(webhook.body)),
          'user-agent': 'Gatehouse-Webhooks/1',
          ...webhook.headers,
        },
      };
      const read = (response: IncomingMessage): void => {
        status = response.statusCode ?? null;
        headers = keptHeaders(response.headers);
        response.on('data', (chunk: Buffer) => {
          const room = MAX_RESPONSE_BYTES - Math.min(received, MAX_RESPONSE_BYTES);
          if (room > 0) chunks.push(chunk.subarray(0, room));
          received += chunk.length;
          // A byte past what is kept tells the body was longer: read no more.
          if (received > MAX_RESPONSE_BYTES) finish(null);
        });
        response.on('end', () => finish(null));
        response.on('error', () => finish(null));
      };
      const request = (url.protocol === 'https:' ? httpsRequest : httpRequest)(url, options, read);
      request.on('error', (error) => finish(describe(error)));
      if (signal?.aborted === true) finish('aborted');
      else request.end(webhook.body);
    });
  }
}
