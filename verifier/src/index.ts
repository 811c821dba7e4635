import { createRemoteJWKSet, errors as joseErrors, jwtVerify, JWTPayload } from 'jose';

/**
 * @gatehouse/verifier: verifies Gatehouse access tokens in a resource server (RFC 9068 checks with jose), and applies
 * revocations and role changes from Gatehouse's revocation feed (SSF 1.0 / CAEP 1.0 over RFC 8936 poll) within a
 * second, with no call to Gatehouse per request. Fails closed when the feed is silent (docs/revocation-feed.md).
 */

export interface VerifierOptions {
  /** Gatehouse's issuer URL (its JWT_ISSUER); the metadata is discovered from it. */
  issuer: string;
  /** The audience this resource server is registered with. */
  audience: string;
  /** The resource server's client credentials (`gatehouse resource-server add`). */
  clientId: string;
  clientSecret: string;
  /** Past this many seconds without an answer from the feed, `verify` refuses with `feed_stale`. Default 10. */
  maxStalenessSeconds?: number;
  /** When the feed is stale, ask Gatehouse's introspection endpoint per token instead of refusing. Default false. */
  fallbackToIntrospection?: boolean;
  /** Also accept tokens for Gatehouse's default audience (as introspection does). Default true. */
  acceptDefaultAudience?: string | false;
  /** For tests: another fetch. */
  fetch?: typeof fetch;
}

export type VerifyErrorCode = 'invalid_token' | 'revoked' | 'insufficient_scope' | 'feed_stale';

export class VerifyError extends Error {
  constructor(
    readonly code: VerifyErrorCode,
    message: string,
  ) {
    super(message);
    this.name = 'VerifyError';
  }
}

/** Who a verified token is, and what it may do now. */
export interface VerifiedAccess {
  userId: string;
  organizationId: string;
  apiKeyId: string;
  scopes: string[];
}

export interface Verifier {
  verify(token: string, options?: { scopes?: readonly string[] }): Promise<VerifiedAccess>;
  /** Whether the feed has answered within maxStalenessSeconds. */
  readonly fresh: boolean;
  close(): Promise<void>;
}

const CREDENTIAL_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/credential-change';
const TOKEN_CLAIMS_CHANGE = 'https://schemas.openid.net/secevent/caep/event-type/token-claims-change';
/** Tokens live at most 24 h: a revoked key is remembered a little longer. */
const REVOKED_MEMORY_MS = 25 * 60 * 60 * 1000;
const VERIFIED_CACHE_SIZE = 10_000;
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 5_000;
/** A long poll the server never answers (a silent network) is given up after this long. */
const LONG_POLL_TIMEOUT_MS = 30_000;

interface AccessClaims extends JWTPayload {
  sub: string;
  org: string;
  client_id: string;
  scope?: string;
  exp: number;
  iat: number;
}

interface Discovered {
  jwksUri: string;
  introspectionEndpoint: string;
  pollEndpoint: string;
}

/** Discovers Gatehouse, opens the feed, and resolves once the feed has answered once (so verify starts fresh). */
export async function createVerifier(options: VerifierOptions): Promise<Verifier> {
  const verifier = new FeedVerifier(options);
  await verifier.start();
  return verifier;
}

class FeedVerifier implements Verifier {
  private readonly fetch: typeof fetch;
  private readonly maxStalenessMs: number;
  private readonly audiences: string[];
  private readonly authorization: string;
  private readonly verified = new Map<string, AccessClaims>();
  private readonly revoked = new Map<string, number>();
  /** `${org} ${sub}` -> the scopes the member's role now allows (the latest token-claims-change). */
  private readonly allowed = new Map<string, Set<string>>();
  private readonly stopping = new AbortController();
  private readonly loops: Array<Promise<void>> = [];
  private discovered: Discovered | undefined;
  private jwks: ReturnType<typeof createRemoteJWKSet> | undefined;
  private lastContact = 0;
  private acks: string[] = [];
  private setErrs: Record<string, { err: string; description: string }> = {};

  constructor(private readonly options: VerifierOptions) {
    this.fetch = options.fetch ?? fetch;
    this.maxStalenessMs = (options.maxStalenessSeconds ?? 10) * 1000;
    const defaultAudience = options.acceptDefaultAudience ?? 'gatehouse';
    this.audiences = defaultAudience === false ? [options.audience] : [options.audience, defaultAudience];
    this.authorization = `Basic ${Buffer.from(
      `${encodeURIComponent(options.clientId)}:${encodeURIComponent(options.clientSecret)}`,
    ).toString('base64')}`;
  }

  get fresh(): boolean {
    return Date.now() - this.lastContact <= this.maxStalenessMs;
  }

  async start(): Promise<void> {
    const base = this.options.issuer.replace(/\/+$/, '');
    const metadata = await this.getJson<{ issuer: string; jwks_uri: string; introspection_endpoint: string }>(
      `${base}/.well-known/oauth-authorization-server`,
    );
    if (metadata.issuer !== this.options.issuer) {
      throw new Error(`the metadata's issuer ${metadata.issuer} is not ${this.options.issuer}`);
    }
    const ssf = await this.getJson<{ configuration_endpoint: string }>(`${base}/.well-known/ssf-configuration`);
    const stream = await this.getJson<{ delivery: { endpoint_url: string } }>(ssf.configuration_endpoint, true);
    this.discovered = {
      jwksUri: metadata.jwks_uri,
      introspectionEndpoint: metadata.introspection_endpoint,
      pollEndpoint: stream.delivery.endpoint_url,
    };
    this.jwks = createRemoteJWKSet(new URL(metadata.jwks_uri));
    // Everything pending first, then the long poll (latency) and a heartbeat (freshness while the feed is quiet).
    await this.poll(true);
    this.loops.push(this.loop(false), this.loop(true));
  }

  async close(): Promise<void> {
    this.stopping.abort();
    await Promise.allSettled(this.loops);
  }

  async verify(token: string, options: { scopes?: readonly string[] } = {}): Promise<VerifiedAccess> {
    if (!this.fresh) {
      if (!this.options.fallbackToIntrospection) {
        throw new VerifyError('feed_stale', 'the revocation feed has not answered recently');
      }
      return this.introspect(token, options.scopes ?? []);
    }
    const claims = await this.claims(token);
    if (this.revoked.has(claims.client_id)) throw new VerifyError('revoked', 'the API key of this token was revoked');
    let scopes = claims.scope === undefined || claims.scope === '' ? [] : claims.scope.split(' ');
    const allowed = this.allowed.get(`${claims.org} ${claims.sub}`);
    if (allowed !== undefined) scopes = scopes.filter((scope) => allowed.has(scope));
    return this.access(claims.sub, claims.org, claims.client_id, scopes, options.scopes ?? []);
  }

  private access(
    userId: string,
    organizationId: string,
    apiKeyId: string,
    scopes: string[],
    required: readonly string[],
  ): VerifiedAccess {
    const missing = required.filter((scope) => !scopes.includes(scope));
    if (missing.length > 0) throw new VerifyError('insufficient_scope', `missing ${missing.join(' ')}`);
    return { userId, organizationId, apiKeyId, scopes };
  }

  /** The token's claims, verified once and remembered until it expires. */
  private async claims(token: string): Promise<AccessClaims> {
    const known = this.verified.get(token);
    if (known !== undefined) {
      if (known.exp * 1000 > Date.now()) return known;
      this.verified.delete(token);
      throw new VerifyError('invalid_token', 'the token has expired');
    }
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.jwks!, {
        issuer: this.options.issuer,
        audience: this.audiences,
        typ: 'at+jwt',
        algorithms: ['ES256'],
        requiredClaims: ['iss', 'exp', 'aud', 'sub', 'iat', 'jti', 'client_id'],
      }));
    } catch (error) {
      const reason = error instanceof joseErrors.JOSEError ? error.code : 'unreadable';
      throw new VerifyError('invalid_token', `the token is not a valid Gatehouse access token (${reason})`);
    }
    const claims = payload as AccessClaims;
    if (typeof claims.org !== 'string' || typeof claims.client_id !== 'string' || payload.token_use !== 'access') {
      throw new VerifyError('invalid_token', 'the token is not a Gatehouse access token');
    }
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, claims);
    return claims;
  }

  /** RFC 7662 at Gatehouse, for a stale feed when asked to: the live state, one call per token. */
  private async introspect(token: string, required: readonly string[]): Promise<VerifiedAccess> {
    let body: Record<string, unknown>;
    try {
      const response = await this.fetch(this.discovered!.introspectionEndpoint, {
        method: 'POST',
        headers: { authorization: this.authorization, 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token }).toString(),
        signal: AbortSignal.timeout(5_000),
      });
      if (!response.ok) throw new Error(`introspection answered ${response.status}`);
      body = (await response.json()) as Record<string, unknown>;
    } catch {
      throw new VerifyError('feed_stale', 'the revocation feed is stale and introspection failed');
    }
    if (body.active !== true) throw new VerifyError('invalid_token', 'the token is not active');
    const scopes = typeof body.scope === 'string' && body.scope !== '' ? body.scope.split(' ') : [];
    return this.access(String(body.sub), String(body.org), String(body.client_id), scopes, required);
  }

  /** Polls until closed: the long poll waits at Gatehouse for the next event; the heartbeat returns at once. */
  private async loop(heartbeat: boolean): Promise<void> {
    let backoff = BACKOFF_MIN_MS;
    while (!this.stopping.signal.aborted) {
      try {
        await this.poll(heartbeat);
        backoff = BACKOFF_MIN_MS;
        if (heartbeat) await this.sleep(Math.max(250, this.maxStalenessMs / 3));
      } catch {
        if (this.stopping.signal.aborted) return;
        await this.sleep(backoff);
        backoff = Math.min(backoff * 2, BACKOFF_MAX_MS);
      }
    }
  }

  private async poll(returnImmediately: boolean): Promise<void> {
    const ack = this.acks;
    const setErrs = this.setErrs;
    this.acks = [];
    this.setErrs = {};
    const timeout = AbortSignal.timeout(returnImmediately ? 5_000 : LONG_POLL_TIMEOUT_MS);
    let response: Response;
    try {
      response = await this.fetch(this.discovered!.pollEndpoint, {
        method: 'POST',
        headers: { authorization: this.authorization, 'content-type': 'application/json' },
        body: JSON.stringify({ maxEvents: 1000, returnImmediately, ack, setErrs }),
        signal: AbortSignal.any([timeout, this.stopping.signal]),
      });
      if (!response.ok) throw new Error(`the feed answered ${response.status}`);
    } catch (error) {
      // Not acknowledged: said again with the next poll.
      this.acks.push(...ack);
      Object.assign(this.setErrs, setErrs);
      throw error;
    }
    const { sets } = (await response.json()) as { sets: Record<string, string>; moreAvailable: boolean };
    this.lastContact = Date.now();
    for (const [jti, set] of Object.entries(sets)) await this.apply(jti, set);
    this.forgetOldRevocations();
  }

  private async apply(jti: string, set: string): Promise<void> {
    try {
      const { payload } = await jwtVerify(set, this.jwks!, {
        issuer: this.options.issuer,
        audience: this.options.audience,
        typ: 'secevent+jwt',
        algorithms: ['ES256'],
      });
      const events = (payload.events ?? {}) as Record<string, Record<string, unknown>>;
      const subject = payload.sub_id as { format?: string; id?: string; sub?: string } | undefined;
      const revoke = events[CREDENTIAL_CHANGE];
      if (revoke !== undefined && revoke.change_type === 'revoke' && typeof subject?.id === 'string') {
        this.revoked.set(subject.id, Date.now());
      }
      const change = events[TOKEN_CLAIMS_CHANGE] as { claims?: { org?: string; scope?: string } } | undefined;
      if (change?.claims?.org !== undefined && typeof subject?.sub === 'string') {
        const scope = change.claims.scope ?? '';
        this.allowed.set(`${change.claims.org} ${subject.sub}`, new Set(scope === '' ? [] : scope.split(' ')));
      }
      this.acks.push(jti);
    } catch (error) {
      this.setErrs[jti] = { err: 'invalid_issuer', description: error instanceof Error ? error.message : 'unreadable' };
    }
  }

  private forgetOldRevocations(): void {
    const before = Date.now() - REVOKED_MEMORY_MS;
    for (const [id, at] of this.revoked) if (at < before) this.revoked.delete(id);
  }

  private async getJson<T>(url: string, authenticated = false): Promise<T> {
    const response = await this.fetch(url, {
      headers: authenticated ? { authorization: this.authorization } : {},
      signal: AbortSignal.timeout(10_000),
    });
    if (!response.ok) throw new Error(`${url} answered ${response.status}`);
    return (await response.json()) as T;
  }

  private sleep(ms: number): Promise<void> {
    const { signal } = this.stopping;
    return new Promise((resolve) => {
      const onAbort = (): void => {
        clearTimeout(timer);
        resolve();
      };
      const timer = setTimeout(() => {
        signal.removeEventListener('abort', onAbort);
        resolve();
      }, ms);
      signal.addEventListener('abort', onAbort, { once: true });
    });
  }
}
