import { IncomingMessage, request as httpRequest, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { addressKind, guardedLookup, mayConnectTo } from '../common/address-rules';

/** At most this much of an answer's body is read; the answer's status is all that counts. */
export const MAX_RESPONSE_BYTES = 4096;

/** One attempt's outcome, as the delivery log keeps it. */
export interface AttemptOutcome {
  /** Answered 2xx. */
  delivered: boolean;
  /** The answer's status, null when there was none (no connection, time-out before the status line). */
  status: number | null;
  /** Why it failed without an answer, in a few words; null when it was answered. */
  error: string | null;
}

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
      return Promise.resolve({ delivered: false, status: null, error: 'invalid url' });
    }
    // An IP address in the URL is connected to without a lookup: it is checked here.
    if (addressKind(url.hostname) !== undefined && !mayConnectTo(url.hostname, this.allowLoopback)) {
      return Promise.resolve({ delivered: false, status: null, error: 'address not allowed' });
    }
    return new Promise((settle) => {
      let status: number | null = null;
      let done = false;
      const finish = (error: string | null): void => {
        if (done) return;
        done = true;
        clearTimeout(timer);
        signal?.removeEventListener('abort', aborted);
        request.destroy();
        const answered = status !== null;
        settle({
          delivered: answered && status! >= 200 && status! < 300,
          status,
          error: answered ? null : error,
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
        let received = 0;
        response.on('data', (chunk: Buffer) => {
          received += chunk.length;
          if (received >= MAX_RESPONSE_BYTES) finish(null);
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
