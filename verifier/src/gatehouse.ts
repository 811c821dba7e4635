import { hostname } from 'node:os';
import { VerifierSetupError } from './errors';

/** The HTTP side of the verifier: pinned discovery, the instance stream, polls and introspection. */

const POLL_DELIVERY = 'urn:ietf:rfc:8936';
/** ADR 0031: S is the stream's creation plus 2 s, for a transaction that read the stream list just before. */
const START_MARGIN_SECONDS = 2;
const SETUP_TIMEOUT_MS = 10_000;
const DELETE_TIMEOUT_MS = 2_000;
const INTROSPECTION_TIMEOUT_MS = 5_000;
const MAX_RETRY_AFTER_MS = 60_000;
const MAX_DESCRIPTION = 200;
/** How much of a refused redirect's Location an error message quotes. */
const MAX_LOCATION = 200;

export interface ClientOptions {
  issuer: string;
  audience: string;
  clientId: string;
  clientSecret: string;
  fetch: typeof fetch;
}

export interface Endpoints {
  jwksUri: string;
  introspectionEndpoint: string;
  configurationEndpoint: string;
  /** The metadata's scopes_supported: Gatehouse's permissions, which a role bounds. Absent: unknown. */
  permissions?: ReadonlySet<string>;
}

export interface InstanceStream {
  id: string;
  pollEndpoint: string;
  /** Seconds, on Gatehouse's clock: every change committed after it reaches this stream. */
  startTime: number;
}

export interface PollRequest {
  maxEvents: number;
  returnImmediately: boolean;
  ack: string[];
  setErrs: Record<string, { err: string; description: string }>;
}

export interface PollAnswer {
  sets: Record<string, unknown>;
  moreAvailable: boolean;
}

/** The poll endpoint answered 404: the stream was deleted (idle too long); the verifier starts again. */
export class StreamGone extends Error {}

/** 429: too many polls wait at Gatehouse; try again after `retryAfterMs`. */
export class TooManyPolls extends Error {
  constructor(
    message: string,
    readonly retryAfterMs: number,
  ) {
    super(message);
  }
}

type Json = Record<string, unknown>;

export class GatehouseClient {
  private readonly base: string;
  private readonly origin: string;
  private readonly authorization: string;
  private endpoints: Endpoints | undefined;

  constructor(private readonly options: ClientOptions) {
    let issuer: URL;
    try {
      issuer = new URL(options.issuer);
    } catch {
      throw new VerifierSetupError(`the issuer ${options.issuer} is not a URL`);
    }
    this.origin = issuer.origin;
    this.base = options.issuer.replace(/\/+$/, '');
    // RFC 6749 section 2.3.1: each part form-encoded before Basic.
    this.authorization = `Basic ${Buffer.from(
      `${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`,
    ).toString('base64')}`;
  }

  /** The metadata and the SSF configuration, refused unless they are the configured issuer's (ADR 0031). */
  async discover(): Promise<Endpoints> {
    const metadataUrl = `${this.base}/.well-known/oauth-authorization-server`;
    const metadata = await this.json(await this.send('GET', metadataUrl, { timeoutMs: SETUP_TIMEOUT_MS }), metadataUrl);
    this.pinIssuer(metadata.issuer, metadataUrl);
    const jwksUri = this.pinned('jwks_uri', metadata.jwks_uri, metadataUrl);
    const introspectionEndpoint = this.pinned('introspection_endpoint', metadata.introspection_endpoint, metadataUrl);
    const ssfUrl = `${this.base}/.well-known/ssf-configuration`;
    const ssf = await this.json(await this.send('GET', ssfUrl, { timeoutMs: SETUP_TIMEOUT_MS }), ssfUrl);
    this.pinIssuer(ssf.issuer, ssfUrl);
    if (ssf.jwks_uri !== undefined) this.pinned('jwks_uri', ssf.jwks_uri, ssfUrl);
    const configurationEndpoint = this.pinned('configuration_endpoint', ssf.configuration_endpoint, ssfUrl);
    this.endpoints = { jwksUri, introspectionEndpoint, configurationEndpoint };
    const scopes: unknown = metadata.scopes_supported;
    if (Array.isArray(scopes) && scopes.every((scope) => typeof scope === 'string')) {
      this.endpoints.permissions = new Set(scopes);
    }
    return this.endpoints;
  }

  /** A stream of this instance's own (SSF stream management), so no replica's acknowledgement hides an event. */
  async createStream(signal?: AbortSignal): Promise<InstanceStream> {
    const url = this.endpoints!.configurationEndpoint;
    const response = await this.send('POST', url, {
      authenticated: true,
      json: { delivery: { method: POLL_DELIVERY }, description: this.description() },
      timeoutMs: SETUP_TIMEOUT_MS,
      signal,
    });
    const stream = await this.json(response, url);
    if (typeof stream.stream_id !== 'string' || stream.stream_id === '') {
      throw new Error(`${url} answered a stream without a stream_id`);
    }
    const id = stream.stream_id;
    try {
      // SSF allows an array; Gatehouse's streams have one audience.
      const aud: unknown =
        Array.isArray(stream.aud) && stream.aud.length === 1 ? (stream.aud as unknown[])[0] : stream.aud;
      if (aud !== this.options.audience) {
        throw new Error(
          `these credentials belong to the resource server of audience ${String(aud)}, not ${this.options.audience}`,
        );
      }
      if (stream.iss !== undefined) this.pinIssuer(stream.iss, url);
      const delivery = stream.delivery as Json | undefined;
      const pollEndpoint = this.pinned('delivery.endpoint_url', delivery?.endpoint_url, url);
      const date = Date.parse(response.headers.get('date') ?? '');
      const now = Number.isNaN(date) ? Date.now() : date;
      return { id, pollEndpoint, startTime: Math.floor(now / 1000) + START_MARGIN_SECONDS };
    } catch (error) {
      await this.deleteStream(id);
      throw error;
    }
  }

  /** Which process polls the stream, for an operator looking at Gatehouse's streams (at most 200 characters). */
  private description(): string {
    const pid = ` pid ${process.pid}`;
    return `${[...hostname()].slice(0, MAX_DESCRIPTION - pid.length).join('')}${pid}`;
  }

  /** Best effort: a stream left behind is deleted by Gatehouse once idle. */
  async deleteStream(id: string): Promise<void> {
    const url = new URL(this.endpoints!.configurationEndpoint);
    url.searchParams.set('stream_id', id);
    try {
      const response = await this.send('DELETE', url.href, { authenticated: true, timeoutMs: DELETE_TIMEOUT_MS });
      await response.body?.cancel();
    } catch {
      // Nothing to do: the stream expires at Gatehouse.
    }
  }

  async poll(
    stream: InstanceStream,
    request: PollRequest,
    timeoutMs: number,
    signal: AbortSignal,
  ): Promise<PollAnswer> {
    const url = stream.pollEndpoint;
    const response = await this.send('POST', url, { authenticated: true, json: request, timeoutMs, signal, raw: true });
    if (response.status === 404) {
      await response.body?.cancel();
      throw new StreamGone(`${url} answered 404: the stream is gone`);
    }
    if (response.status === 429) {
      await response.body?.cancel();
      throw new TooManyPolls(`${url} answered 429`, retryAfterMs(response.headers.get('retry-after')));
    }
    const answer = await this.json(await this.checked(response, 'POST', url, true), url);
    const sets = answer.sets;
    if (typeof sets !== 'object' || sets === null || Array.isArray(sets)) throw new Error(`${url} answered no sets`);
    return { sets: sets as Json, moreAvailable: answer.moreAvailable === true };
  }

  /** RFC 7662 at Gatehouse: the token's live state. */
  async introspect(token: string): Promise<Json> {
    const url = this.endpoints!.introspectionEndpoint;
    const response = await this.send('POST', url, {
      authenticated: true,
      form: new URLSearchParams({ token }).toString(),
      timeoutMs: INTROSPECTION_TIMEOUT_MS,
    });
    return this.json(response, url);
  }

  private pinIssuer(issuer: unknown, url: string): void {
    if (issuer !== this.options.issuer) {
      throw new VerifierSetupError(
        `${url} names the issuer ${JSON.stringify(issuer)}, not ${this.options.issuer} as configured: refused`,
      );
    }
  }

  /** An endpoint on the issuer's own origin, checked before any credential is sent there. */
  private pinned(name: string, value: unknown, url: string): string {
    let parsed: URL;
    try {
      parsed = new URL(String(value));
    } catch {
      throw new VerifierSetupError(`${url} gives no valid ${name} (${JSON.stringify(value)})`);
    }
    if (typeof value !== 'string' || parsed.origin !== this.origin) {
      throw new VerifierSetupError(
        `${url} gives the ${name} ${String(value)}, which is not on the issuer's origin ${this.origin}: refused`,
      );
    }
    return value;
  }

  private async send(
    method: string,
    url: string,
    options: {
      authenticated?: boolean;
      json?: unknown;
      form?: string;
      timeoutMs: number;
      signal?: AbortSignal;
      raw?: boolean;
    },
  ): Promise<Response> {
    const headers: Record<string, string> = {};
    if (options.authenticated) headers.authorization = this.authorization;
    let body: string | undefined;
    if (options.json !== undefined) {
      headers['content-type'] = 'application/json';
      body = JSON.stringify(options.json);
    } else if (options.form !== undefined) {
      headers['content-type'] = 'application/x-www-form-urlencoded';
      body = options.form;
    }
    const timeout = AbortSignal.timeout(options.timeoutMs);
    let response: Response;
    try {
      response = await this.options.fetch(url, {
        method,
        headers,
        body,
        // Never followed: fetch would resend the poll body (307, 308) to wherever the answer points, another origin
        // included, and the credentials with it on a same-origin hop. A redirect is refused below.
        redirect: 'manual',
        signal: options.signal === undefined ? timeout : AbortSignal.any([timeout, options.signal]),
      });
    } catch (error) {
      const why = timeout.aborted ? `no answer within ${options.timeoutMs / 1000} s` : reason(error);
      throw new Error(`cannot reach Gatehouse at ${url}: ${why}`, { cause: error });
    }
    if (isRedirect(response)) {
      await response.body?.cancel();
      throw new Error(this.redirectRefused(method, url, response));
    }
    return options.raw ? response : this.checked(response, method, url, options.authenticated ?? false);
  }

  /** Why a redirect was not followed, naming where it pointed and whether that is the issuer's origin. */
  private redirectRefused(method: string, url: string, response: Response): string {
    const location = response.headers.get('location');
    let where = 'nowhere (no Location)';
    if (location !== null) {
      let origin: string | undefined;
      try {
        origin = new URL(location, url).origin;
      } catch {
        // Not a URL: named as it came.
      }
      const elsewhere = origin === this.origin ? "on the issuer's origin" : `off the issuer's origin ${this.origin}`;
      where = `${JSON.stringify(location.slice(0, MAX_LOCATION))} (${elsewhere})`;
    }
    return `${method} ${url} answered ${response.status}, a redirect to ${where}: refused, the verifier follows no redirect`;
  }

  private async checked(response: Response, method: string, url: string, authenticated: boolean): Promise<Response> {
    if (response.ok) return response;
    await response.body?.cancel();
    if (authenticated && response.status === 401) {
      throw new Error(
        `Gatehouse refused the resource server's credentials at ${url} (401): check clientId and clientSecret`,
      );
    }
    throw new Error(`${method} ${url} answered ${response.status}`);
  }

  private async json(response: Response, url: string): Promise<Json> {
    let body: unknown;
    try {
      body = await response.json();
    } catch (error) {
      throw new Error(`${url} did not answer JSON: ${reason(error)}`, { cause: error });
    }
    if (typeof body !== 'object' || body === null || Array.isArray(body))
      throw new Error(`${url} did not answer an object`);
    return body as Json;
  }
}

/**
 * A redirect as `redirect: 'manual'` gives it: Node's fetch the 3xx itself, a browser's an opaque redirect (status 0).
 * 304 is not one (no request here is conditional).
 */
function isRedirect(response: Response): boolean {
  return (
    response.type === 'opaqueredirect' || (response.status >= 300 && response.status < 400 && response.status !== 304)
  );
}

/** What went wrong underneath fetch's "fetch failed": e.g. "connect ECONNREFUSED 127.0.0.1:9". */
function reason(error: unknown): string {
  if (!(error instanceof Error)) return String(error);
  const cause = error.cause;
  if (cause instanceof AggregateError && cause.errors.length > 0) {
    return cause.errors.map((e: unknown) => (e instanceof Error ? e.message : String(e))).join(', ');
  }
  if (cause instanceof Error) return cause.message || (cause as { code?: string }).code || cause.name;
  return error.message;
}

/** RFC 9110 section 10.2.3: seconds or an HTTP date; 1 s when absent or unreadable. */
function retryAfterMs(header: string | null): number {
  if (header === null) return 1_000;
  const seconds = /^\d+$/.test(header.trim()) ? Number(header) * 1000 : Date.parse(header) - Date.now();
  return Number.isFinite(seconds) ? Math.min(Math.max(seconds, 0), MAX_RETRY_AFTER_MS) : 1_000;
}
