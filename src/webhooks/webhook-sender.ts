import { lookup as resolve } from 'node:dns';
import { IncomingMessage, request as httpRequest, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import type { LookupFunction } from 'node:net';
import { addressKind, mayDeliverTo } from './address-rules';

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

/** Every address a host name resolved to that may not be called (docs/adr/0037-signed-webhooks.md#ssrf). */
export class AddressRefused extends Error {
  readonly code = 'EADDRREFUSED';
  constructor() {
    super('address not allowed');
    this.name = 'AddressRefused';
  }
}

/**
 * A `lookup` for node:http(s): the name is resolved once, refused when any of its addresses may not be called, and the
 * socket connects to the addresses checked here; nothing resolves the name a second time, so a DNS answer that
 * changes between the check and the connection (rebinding) cannot reach a refused address.
 */
export function guardedLookup(allowLoopback: boolean): LookupFunction {
  return (hostname, options, callback) => {
    resolve(hostname, { all: true, family: options.family, hints: options.hints }, (error, addresses) => {
      if (error !== null) return callback(error, '', 0);
      if (addresses.length === 0 || addresses.some(({ address }) => !mayDeliverTo(address, allowLoopback))) {
        return callback(new AddressRefused(), '', 0);
      }
      if (options.all === true) return callback(null, addresses);
      return callback(null, addresses[0].address, addresses[0].family);
    });
  };
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
    if (addressKind(url.hostname) !== undefined && !mayDeliverTo(url.hostname, this.allowLoopback)) {
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
