/**
 * The typed Gatehouse client (docs/client.md): openapi-fetch over the types that openapi-typescript
 * generates from the service's own OpenAPI document (schema.d.ts, by `npm run client:generate`;
 * never edited by hand). Every path, parameter, body and answer is checked by the compiler against
 * the API as the server describes it.
 *
 *   const gatehouse = createGatehouseClient({ baseUrl, bearer: apiKeyTokenSource({ baseUrl, apiKey }) });
 *   const { api_keys } = await unwrap(gatehouse.GET('/v1/user-api-keys', { params: { query: { limit: 50 } } }));
 */
import createClient, { type Client, type ClientOptions, type Middleware } from 'openapi-fetch';
import type { components, paths } from './schema';

export type { components, paths };
export type Schemas = components['schemas'];
/** A client over the whole API, as createGatehouseClient makes it. */
export type GatehouseClient = Client<paths>;
export type AccessToken = Schemas['AccessTokenResponse'];
/** The stable name of an error's cause, one per cause, from the service's catalogue (docs/api.md#errors). */
export type ErrorReason = Schemas['ErrorReason'];

/** Where a Bearer token comes from: a fixed token, or a function asked before every request. */
export type TokenSource = string | (() => string | undefined | Promise<string | undefined>);

export interface GatehouseClientOptions extends ClientOptions {
  /** The service's origin, e.g. `https://gatehouse.example.com` (paths start with /v1). */
  baseUrl: string;
  /**
   * Sent as `Authorization: Bearer <token>` on every request that sets no Authorization header of
   * its own (POST /v1/token sets `ApiKey …`, see exchangeApiKey).
   */
  bearer?: TokenSource;
}

/** The middleware behind `bearer`: adds the header, leaves an explicit Authorization alone. */
export function bearerAuth(token: TokenSource): Middleware {
  return {
    async onRequest({ request }) {
      if (request.headers.has('Authorization')) return undefined;
      const value = typeof token === 'string' ? token : await token();
      if (value !== undefined) request.headers.set('Authorization', `Bearer ${value}`);
      return request;
    },
  };
}

/**
 * A client for the Gatehouse API. `P` is the generated `paths` unless a caller needs another
 * description of the API (a test of a route before it is described, say).
 */
export function createGatehouseClient<P extends object = paths>(options: GatehouseClientOptions): Client<P> {
  const { bearer, ...clientOptions } = options;
  const client = createClient<P>(clientOptions);
  if (bearer !== undefined) client.use(bearerAuth(bearer));
  return client;
}

/** The header of POST /v1/token: `Authorization: ApiKey <key>` (docs/api.md#post-v1token). */
export function apiKeyHeaders(apiKey: string): { Authorization: string } {
  return { Authorization: `ApiKey ${apiKey}` };
}

/** An error answer of the API (`{ code, message, reason, ...details }`, docs/api.md#errors) as an exception. */
export class GatehouseError extends Error {
  /** HTTP status. */
  readonly status: number;
  /** `INVALID_ARGUMENT`, `UNAUTHENTICATED`, ...; `UNKNOWN` when the answer was not an error body of the API. */
  readonly code: string;
  /**
   * What to branch on: `api_key_revoked`, `credential_rate_limited`, ...; undefined when the answer was not an error
   * body of the API. A reason this client's types do not know yet (a newer server) comes as it is.
   */
  readonly reason: ErrorReason | undefined;
  /** The whole error body (a blocked integration save carries `validation` beside code and message). */
  readonly body: Record<string, unknown>;
  /** Seconds to wait before trying again, from `Retry-After` (429). */
  readonly retryAfterSeconds: number | undefined;
  /** The answer's `X-Request-Id`: the id on the server's log lines for this request. */
  readonly requestId: string | undefined;

  constructor(
    status: number,
    code: string,
    message: string,
    details: {
      reason?: ErrorReason;
      body?: Record<string, unknown>;
      retryAfterSeconds?: number;
      requestId?: string;
    } = {},
  ) {
    super(message);
    this.name = 'GatehouseError';
    this.status = status;
    this.code = code;
    this.reason = details.reason;
    this.body = details.body ?? {};
    this.retryAfterSeconds = details.retryAfterSeconds;
    this.requestId = details.requestId;
  }
}

function isErrorBody(value: unknown): value is { code: string; message: string } & Record<string, unknown> {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as { code?: unknown }).code === 'string' &&
    typeof (value as { message?: unknown }).message === 'string'
  );
}

/** The GatehouseError for a failed answer, whatever its body was (an error body, text of a proxy, nothing). */
export function toGatehouseError(response: Response, error: unknown): GatehouseError {
  const retryAfter = Number(response.headers.get('Retry-After') ?? Number.NaN);
  const details = {
    retryAfterSeconds: Number.isFinite(retryAfter) ? retryAfter : undefined,
    requestId: response.headers.get('X-Request-Id') ?? undefined,
  };
  if (isErrorBody(error)) {
    const reason = typeof error.reason === 'string' ? (error.reason as ErrorReason) : undefined;
    return new GatehouseError(response.status, error.code, error.message, { ...details, reason, body: error });
  }
  return new GatehouseError(
    response.status,
    'UNKNOWN',
    `HTTP ${response.status} without an error body of the API`,
    details,
  );
}

/**
 * The data of a successful answer, or a GatehouseError thrown for an error answer.
 *
 *   const { api_key } = await unwrap(gatehouse.GET('/v1/user-api-keys/{id}', { params: { path: { id } } }));
 */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok || error !== undefined) throw toGatehouseError(response, error);
  return data as T;
}

/** POST /v1/token with an API key: the access token answer, or a GatehouseError (401, 429, ...). */
export function exchangeApiKey<P extends object>(client: Client<P>, apiKey: string): Promise<AccessToken> {
  const token = client as unknown as Client<paths>;
  return unwrap(token.POST('/v1/token', { headers: apiKeyHeaders(apiKey) }));
}

export interface ApiKeyTokenSourceOptions {
  baseUrl: string;
  apiKey: string;
  /** Renew this many seconds before the access token expires (default 60). */
  renewBeforeSeconds?: number;
  fetch?: ClientOptions['fetch'];
}

/**
 * For internal tooling (docs/client.md#internal-tooling): a Bearer token source that exchanges the
 * API key on first use and again shortly before the access token expires, so a long-running tool
 * holds the key and never a stale token. Concurrent requests share one exchange.
 */
export function apiKeyTokenSource(options: ApiKeyTokenSourceOptions): () => Promise<string> {
  const exchanger = createGatehouseClient({ baseUrl: options.baseUrl, fetch: options.fetch });
  const renewBeforeMs = (options.renewBeforeSeconds ?? 60) * 1000;
  let current: { token: string; renewAt: number } | undefined;
  let pending: Promise<string> | undefined;
  return () => {
    if (current !== undefined && Date.now() < current.renewAt) return Promise.resolve(current.token);
    pending ??= exchangeApiKey(exchanger, options.apiKey)
      .then((answer) => {
        const lifetimeMs = answer.expires_in * 1000;
        current = {
          token: answer.access_token,
          renewAt: Date.now() + Math.max(lifetimeMs - renewBeforeMs, lifetimeMs / 2),
        };
        return answer.access_token;
      })
      .finally(() => {
        pending = undefined;
      });
    return pending;
  };
}
