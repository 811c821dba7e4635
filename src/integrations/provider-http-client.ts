import type { Deadline } from './deadline';

/**
 * Limits of docs/integrations.md#provider-client: per-request timeout, redirects never followed (so keys never reach
 * another host), bounded retries honouring the provider's rate-limit headers.
 */
export interface ProviderHttpOptions {
  timeoutMs: number;
  maxRetries: number;
  maxRetryWaitMs: number;
  /** First backoff step when the provider gives no hint; doubles each retry (capped by maxRetryWaitMs). */
  baseBackoffMs?: number;
  fetch?: typeof fetch;
  sleep?: (ms: number) => Promise<void>;
  now?: () => number;
}

export interface ProviderRequest {
  url: URL;
  headers: Record<string, string>;
  /** Otherwise discarded unread (some list answers are large). */
  readBody: boolean;
  deadline?: Deadline;
}

export type ProviderResponse =
  | { kind: 'answered'; status: number; body: unknown; attempts: number }
  | { kind: 'timeout'; attempts: number }
  | { kind: 'network_error'; attempts: number; error: unknown };

const sleepFor = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/** Null when the provider asks for longer than we will wait. `X-RateLimit-Reset` is Datadog's own header. */
export function retryDelayMs(
  headers: Headers | undefined,
  retry: number,
  options: { baseBackoffMs: number; maxRetryWaitMs: number; now: number },
): number | null {
  const advised = advisedDelayMs(headers, options.now);
  if (advised !== undefined) return advised > options.maxRetryWaitMs ? null : advised;
  return Math.min(options.baseBackoffMs * 2 ** retry, options.maxRetryWaitMs);
}

function advisedDelayMs(headers: Headers | undefined, now: number): number | undefined {
  const reset = headers?.get('x-ratelimit-reset')?.trim();
  if (reset !== undefined && /^\d{1,9}$/.test(reset)) return Number(reset) * 1000;
  const retryAfter = headers?.get('retry-after')?.trim();
  if (retryAfter === undefined || retryAfter === '') return undefined;
  if (/^\d{1,9}$/.test(retryAfter)) return Number(retryAfter) * 1000;
  // An HTTP-date (IMF-fixdate); V8's Date.parse would also "parse" things like "-1".
  if (!/^[A-Za-z]{3}, \d{2} [A-Za-z]{3} \d{4} \d{2}:\d{2}:\d{2} GMT$/.test(retryAfter)) return undefined;
  const date = Date.parse(retryAfter);
  return Number.isNaN(date) ? undefined : Math.max(0, date - now);
}

/** By name: the DOMException fetch rejects with need not be an `instanceof Error` in every realm. */
function isTimeout(error: unknown): boolean {
  const name = (error as { name?: unknown } | null)?.name;
  return name === 'TimeoutError' || name === 'AbortError';
}

export class ProviderHttpClient {
  private readonly fetch: typeof fetch;
  private readonly sleep: (ms: number) => Promise<void>;
  private readonly now: () => number;
  private readonly baseBackoffMs: number;

  constructor(private readonly options: ProviderHttpOptions) {
    this.fetch = options.fetch ?? globalThis.fetch;
    this.sleep = options.sleep ?? sleepFor;
    this.now = options.now ?? Date.now;
    this.baseBackoffMs = options.baseBackoffMs ?? 250;
  }

  /** Never rejects, except with the deadline's error once `request.deadline` has passed. */
  async get(request: ProviderRequest): Promise<ProviderResponse> {
    const deadline = request.deadline?.signal;
    for (let attempt = 1; ; attempt += 1) {
      deadline?.throwIfAborted();
      const result = await this.once(request);
      deadline?.throwIfAborted();
      if (result.kind === 'timeout') return { kind: 'timeout', attempts: attempt };
      const retryable = result.kind === 'network_error' || isRetryableStatus(result.status);
      if (!retryable || attempt > this.options.maxRetries) return { ...result, attempts: attempt };
      const wait = retryDelayMs(result.kind === 'answered' ? result.headers : undefined, attempt - 1, {
        baseBackoffMs: this.baseBackoffMs,
        maxRetryWaitMs: this.options.maxRetryWaitMs,
        now: this.now(),
      });
      if (wait === null || (request.deadline !== undefined && wait >= request.deadline.remainingMs())) {
        return { ...result, attempts: attempt };
      }
      await this.sleep(wait);
    }
  }

  private async once(
    request: ProviderRequest,
  ): Promise<
    | { kind: 'answered'; status: number; headers: Headers; body: unknown }
    | { kind: 'timeout' }
    | { kind: 'network_error'; error: unknown }
  > {
    try {
      const response = await this.fetch(request.url, {
        method: 'GET',
        headers: request.headers,
        redirect: 'manual',
        signal:
          request.deadline === undefined
            ? AbortSignal.timeout(this.options.timeoutMs)
            : AbortSignal.any([AbortSignal.timeout(this.options.timeoutMs), request.deadline.signal]),
      });
      let body: unknown;
      if (request.readBody) {
        const text = await response.text();
        try {
          body = text === '' ? undefined : JSON.parse(text);
        } catch {
          body = undefined;
        }
      } else {
        await response.body?.cancel().catch(() => undefined);
      }
      return { kind: 'answered', status: response.status, headers: response.headers, body };
    } catch (error) {
      return isTimeout(error) ? { kind: 'timeout' } : { kind: 'network_error', error };
    }
  }
}
