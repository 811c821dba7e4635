import { IncomingMessage, request as httpRequest, RequestOptions } from 'node:http';
import { request as httpsRequest } from 'node:https';
import { AddressRefused, addressKind, guardedLookup, mayConnectTo, PrivateNetworks } from '../common/address-rules';

/**
 * What Gatehouse fetches from identity providers (discovery documents, key sets, token endpoints): with a deadline and
 * a size bound, so that an issuer that is slow, silent or sends without end fails in bounded time and memory, and only
 * from addresses it may call (docs/federation.md#discovery).
 */

/** Why a fetch gave no usable answer, in words an operator can act on. */
export class FetchProblem extends Error {}

/** What a request to an identity provider may carry: what jose and openid-client send. */
export interface PinnedRequest {
  method?: string;
  headers?: Headers | Record<string, string>;
  /** A string, a form or bytes (what openid-client sends); any other body is refused. */
  body?: unknown;
  signal?: AbortSignal | null;
}

export interface PinnedFetchOptions {
  /** Loopback addresses may be called (outside production); private, link-local and the rest never. */
  allowLoopback: boolean;
  /** Private networks the operator allowed for identity providers (IDENTITY_PROVIDER_NETWORKS). */
  privateNetworks?: PrivateNetworks;
  /** At most this much of the answer is read; more rejects with FetchProblem. */
  maxBytes: number;
  /** Certificate authorities to trust instead of Node's (a test's local CA); default: Node's. */
  ca?: string;
}

/**
 * `fetch` for what Gatehouse asks of identity providers (discovery documents, key sets, token endpoints), held to the
 * rules webhooks follow (common/address-rules.ts, docs/federation.md#discovery): an IP address in the URL is checked
 * before anything is sent, a host name is resolved once and every address it has checked, and the connection goes to
 * the address checked (no DNS rebinding). No redirect is followed (a 3xx is the answer), no connection is kept, and the
 * body is read whole up to `maxBytes`. Rejects as fetch does (a TypeError whose cause says why), or with FetchProblem.
 */
export function pinnedFetch(url: string | URL, init: PinnedRequest, options: PinnedFetchOptions): Promise<Response> {
  const target = new URL(url);
  if (target.protocol !== 'https:' && target.protocol !== 'http:') {
    return Promise.reject(new TypeError('fetch failed', { cause: new Error(`${target.protocol} is not http(s)`) }));
  }
  // An IP address in the URL is connected to without a look-up: it is checked here.
  if (
    addressKind(target.hostname) !== undefined &&
    !mayConnectTo(target.hostname, options.allowLoopback, options.privateNetworks)
  ) {
    return Promise.reject(new TypeError('fetch failed', { cause: new AddressRefused() }));
  }
  const body = requestBody(init.body);
  if (body === null) return Promise.reject(new TypeError('fetch failed', { cause: new Error('unsupported body') }));
  const headers: Record<string, string> = {};
  new Headers(init.headers ?? {}).forEach((value, name) => (headers[name] = value));
  if (body !== undefined) {
    headers['content-length'] = String(body.length);
    if (init.body instanceof URLSearchParams && headers['content-type'] === undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded;charset=UTF-8';
    }
  }
  const requestOptions: RequestOptions = {
    method: init.method ?? 'GET',
    headers,
    agent: false,
    lookup: guardedLookup(options.allowLoopback, options.privateNetworks),
    signal: init.signal ?? undefined,
  };
  if (options.ca !== undefined) Object.assign(requestOptions, { ca: options.ca });
  return new Promise<Response>((resolve, reject) => {
    const request = (target.protocol === 'https:' ? httpsRequest : httpRequest)(target, requestOptions, (answer) => {
      readAnswer(answer, options.maxBytes).then(
        (bytes) => resolve(toResponse(answer, bytes)),
        (error: unknown) => {
          request.destroy();
          if (init.signal?.aborted === true) reject(new DOMException('the deadline passed', 'AbortError'));
          else reject(error instanceof FetchProblem ? error : new TypeError('fetch failed', { cause: error }));
        },
      );
    });
    request.on('error', (error) => {
      // An abort (the caller's deadline) keeps its name, as fetch's does: callers tell a time-out by it.
      reject(error.name === 'AbortError' ? error : new TypeError('fetch failed', { cause: error }));
    });
    request.end(body);
  });
}

function requestBody(body: unknown): Buffer | undefined | null {
  if (body === undefined || body === null) return undefined;
  if (typeof body === 'string' || body instanceof URLSearchParams) return Buffer.from(body.toString());
  if (body instanceof Uint8Array) return Buffer.from(body);
  if (body instanceof ArrayBuffer) return Buffer.from(body);
  return null;
}

function readAnswer(answer: IncomingMessage, maxBytes: number): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    let settled = false;
    const fail = (error: Error): void => {
      if (settled) return;
      settled = true;
      reject(error);
      answer.destroy();
    };
    const tooLarge = () => fail(new FetchProblem(`the answer is larger than ${maxBytes} bytes`));
    if (Number(answer.headers['content-length'] ?? '0') > maxBytes) return tooLarge();
    const chunks: Buffer[] = [];
    let size = 0;
    answer.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > maxBytes) return tooLarge();
      chunks.push(chunk);
    });
    answer.on('end', () => {
      if (settled) return;
      settled = true;
      resolve(Buffer.concat(chunks));
    });
    answer.on('error', fail);
    answer.on('aborted', () => fail(new Error('the answer was cut off')));
  });
}

function toResponse(answer: IncomingMessage, bytes: Buffer): Response {
  const status = answer.statusCode ?? 502;
  const headers = new Headers();
  for (const [name, value] of Object.entries(answer.headers)) {
    if (value === undefined) continue;
    for (const item of Array.isArray(value) ? value : [value]) headers.append(name, item);
  }
  const empty = status === 204 || status === 304 || (status >= 100 && status < 200);
  return new Response(empty ? null : new Uint8Array(bytes), {
    status: status < 200 || status > 599 ? 502 : status,
    statusText: answer.statusMessage ?? '',
    headers,
  });
}

export interface BoundedAnswer {
  status: number;
  body: Buffer;
}

/** GET, redirects not followed: an issuer's documents are at the addresses it publishes. */
export async function fetchBounded(
  url: string,
  options: {
    timeoutMs: number;
    maxBytes: number;
    accept: string;
    allowLoopback: boolean;
    privateNetworks?: PrivateNetworks;
  },
): Promise<BoundedAnswer> {
  const signal = AbortSignal.timeout(options.timeoutMs);
  try {
    const response = await pinnedFetch(
      url,
      { headers: { accept: options.accept }, signal },
      { allowLoopback: options.allowLoopback, privateNetworks: options.privateNetworks, maxBytes: options.maxBytes },
    );
    if (response.status !== 200) return { status: response.status, body: Buffer.alloc(0) };
    return { status: 200, body: Buffer.from(await response.arrayBuffer()) };
  } catch (error) {
    throw new FetchProblem(describeFetchError(error, options.timeoutMs), { cause: error });
  }
}

/** A fetch for jose's createRemoteJWKSet (its [customFetch]): jose's deadline and redirect rule, with a size bound. */
export function boundedJwksFetch(maxBytes: number, allowLoopback: boolean, privateNetworks?: PrivateNetworks) {
  return async (
    url: string,
    init: { headers: Headers; method: 'GET'; redirect: 'manual'; signal: AbortSignal },
  ): Promise<Response> => {
    const response = await pinnedFetch(url, init, { allowLoopback, privateNetworks, maxBytes });
    return response.status === 200 ? response : new Response(null, { status: response.status });
  };
}

/**
 * "no answer within 3 s", "connect ECONNREFUSED 127.0.0.1:9", "getaddrinfo ENOTFOUND idp.example.com", "the address
 * is private, loopback, link-local…"
 */
export function describeFetchError(error: unknown, timeoutMs: number): string {
  if (error instanceof FetchProblem) return error.message;
  const { name, message, cause } = error as { name?: string; message?: string; cause?: { message?: string } };
  if (name === 'TimeoutError' || name === 'AbortError') return `no answer within ${timeoutMs / 1000} s`;
  if (cause instanceof AddressRefused || error instanceof AddressRefused) return ADDRESS_REFUSED;
  return cause?.message ?? message ?? String(error);
}

/** The refusal of an address, as the operator reads it. */
export const ADDRESS_REFUSED =
  'the address it resolves to is private, loopback, link-local, multicast or reserved, which Gatehouse does not call';
