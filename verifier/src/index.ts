import { createRemoteJWKSet, customFetch, errors as joseErrors, jwtVerify, JWTPayload } from 'jose';
import { AddressList, requestAddress } from './address';
import { asSetupError, VerifierSetupError, VerifyError } from './errors';
import { Feed } from './feed';
import { GatehouseClient } from './gatehouse';
import { ResourceMetadata, resourceMetadata, ResourceMetadataOptions } from './resource-metadata';

export { VerifierSetupError, VerifyError } from './errors';
export type { VerifyErrorCode } from './errors';
export { resourceMetadata } from './resource-metadata';
export type { ProtectedResourceMetadata, ResourceMetadata, ResourceMetadataOptions } from './resource-metadata';

/**
 * @gatehouse/verifier: verifies Gatehouse access tokens in a resource server (RFC 9068 checks with jose), and applies
 * revocations and role changes from Gatehouse's revocation feed (SSF 1.0 / CAEP 1.0 over RFC 8936 poll) within a
 * second, with no call to Gatehouse per request. Fails closed when the feed is silent (docs/revocation-feed.md).
 */

export interface VerifierOptions {
  /** Gatehouse's issuer URL (its JWT_ISSUER); the metadata is discovered from it, and must name it. */
  issuer: string;
  /** The audience this resource server is registered with: the only one accepted. */
  audience: string;
  /** The resource server's client credentials (`gatehouse resource-server add`). */
  clientId: string;
  clientSecret: string;
  /** Past this many seconds without catching up with the feed, `verify` refuses with `feed_stale`. Default 10. */
  maxStalenessSeconds?: number;
  /** When the feed is stale, ask Gatehouse's introspection endpoint per token instead of refusing. Default false. */
  fallbackToIntrospection?: boolean;
  /**
   * The reverse proxies in front of this resource server (CIDRs or addresses) whose X-Forwarded-For is believed when
   * the middleware and the guard read a request's client address, for the tokens of keys with an allowlist. Default
   * none: the connection's peer is the client.
   */
  trustedProxies?: readonly string[];
  /**
   * Serve RFC 9728 protected resource metadata for this audience (the middleware's `protectedResource` routes), and name
   * it in every challenge (`resource_metadata`), as MCP clients need. Default: neither.
   */
  resourceMetadata?: ResourceMetadataOptions;
  /** For tests: another fetch. */
  fetch?: typeof fetch;
}

/** Who a verified token is, and what it may do now. */
export interface VerifiedAccess {
  userId: string;
  organizationId: string;
  /** The credential (API key or workload identity) the token was minted through: its `client_id`. */
  credentialId: string;
  /** @deprecated The same value as credentialId, which names what it holds: any kind of credential. */
  apiKeyId: string;
  scopes: string[];
}

export interface VerifyOptions {
  /** Permissions the token must have. */
  scopes?: readonly string[];
  /**
   * The address the request came from (clientAddress() reads it from a request). A token whose key has an allowlist
   * (`allowed_cidrs`) is refused with `address_not_allowed` for an address outside it, or when none is given.
   */
  clientAddress?: string;
}

/** The parts of a Node request clientAddress() reads. */
export interface AddressedRequest {
  socket?: { remoteAddress?: string };
  headers: Readonly<Record<string, string | string[] | undefined>>;
}

export interface Verifier {
  verify(token: string, options?: VerifyOptions): Promise<VerifiedAccess>;
  /** A request's client address: the peer, or what the trusted proxies (VerifierOptions.trustedProxies) report. */
  clientAddress(request: AddressedRequest): string | undefined;
  /** Whether the feed has caught up within maxStalenessSeconds. */
  readonly fresh: boolean;
  /** The protected resource metadata, when VerifierOptions.resourceMetadata asked for it. */
  readonly resourceMetadata?: ResourceMetadata;
  close(): Promise<void>;
}

const VERIFIED_CACHE_SIZE = 10_000;
/** jose's codes for a JWKS that could not be fetched or read (network errors are not JOSEErrors). */
const JWKS_UNAVAILABLE = new Set([joseErrors.JWKSTimeout.code, joseErrors.JOSEError.code, joseErrors.JWKSInvalid.code]);

interface AccessClaims extends JWTPayload {
  sub: string;
  org: string;
  client_id: string;
  scope?: string;
  exp: number;
  iat: number;
  allowed_cidrs?: string[];
  /** A person's grant (an MCP client's token): revoked by its own credential-change event. */
  grant_id?: string;
}

/** Introspection's answer for a token issued before the stream's start, kept until `untilMs`. */
type Confirmation = { active: false } | { active: true; epoch: number; scopes: string[]; untilMs: number };

interface KnownToken {
  claims: AccessClaims;
  scopes: string[];
  expiresMs: number;
  confirmation?: Confirmation;
  /** The key's allowlist (`allowed_cidrs`), compiled once; undefined: any address. */
  allowed?: AddressList;
}

/**
 * Discovers Gatehouse (pinned to the issuer), opens this instance's stream, and resolves once the feed has caught up
 * (so verify starts fresh). Rejects with VerifierSetupError.
 */
export async function createVerifier(options: VerifierOptions): Promise<Verifier> {
  let trustedProxies: AddressList | undefined;
  if (options.trustedProxies !== undefined) {
    trustedProxies = new AddressList(options.trustedProxies);
    if (trustedProxies.invalid.length > 0) {
      throw new VerifierSetupError(`trustedProxies: not a CIDR or an address: ${trustedProxies.invalid.join(', ')}`);
    }
  }
  const client = new GatehouseClient({ ...options, fetch: options.fetch ?? fetch });
  let endpoints;
  try {
    endpoints = await client.discover();
  } catch (error) {
    throw asSetupError(error);
  }
  const jwks = createRemoteJWKSet(new URL(endpoints.jwksUri), options.fetch ? { [customFetch]: options.fetch } : {});
  const feed = new Feed(client, jwks, {
    issuer: options.issuer,
    audience: options.audience,
    maxStalenessMs: (options.maxStalenessSeconds ?? 10) * 1000,
  });
  await feed.start();
  const verifier = new FeedVerifier(options, client, jwks, feed, trustedProxies, endpoints.permissions);
  if (options.resourceMetadata !== undefined) {
    verifier.resourceMetadata = resourceMetadata(options.issuer, options.audience, options.resourceMetadata);
  }
  return verifier;
}

class FeedVerifier implements Verifier {
  private readonly verified = new Map<string, KnownToken>();
  /** Introspections under way, shared by concurrent verifies of one token. */
  private readonly confirming = new Map<string, Promise<Confirmation>>();
  resourceMetadata?: ResourceMetadata;

  constructor(
    private readonly options: VerifierOptions,
    private readonly client: GatehouseClient,
    private readonly jwks: ReturnType<typeof createRemoteJWKSet>,
    private readonly feed: Feed,
    private readonly trustedProxies: AddressList | undefined,
    /** Gatehouse's own permissions (its metadata's scopes_supported): what a role change narrows; unknown: all. */
    private readonly permissions: ReadonlySet<string> | undefined,
  ) {}

  clientAddress(request: AddressedRequest): string | undefined {
    return requestAddress(request.socket?.remoteAddress, request.headers['x-forwarded-for'], this.trustedProxies);
  }

  get fresh(): boolean {
    return this.feed.fresh;
  }

  close(): Promise<void> {
    return this.feed.close();
  }

  async verify(token: string, options: VerifyOptions = {}): Promise<VerifiedAccess> {
    const feed = this.feed;
    if (!feed.fresh) {
      if (!this.options.fallbackToIntrospection) {
        throw new VerifyError('feed_stale', 'the revocation feed has not answered recently');
      }
      return this.introspect(token, options.scopes ?? [], options.clientAddress);
    }
    const known = this.verified.get(token) ?? (await this.check(token));
    const now = Date.now();
    if (known.expiresMs <= now) {
      this.verified.delete(token);
      throw new VerifyError('invalid_token', 'the token has expired');
    }
    const { claims } = known;
    if (claims.grant_id !== undefined) {
      if (feed.revoked.has(claims.grant_id)) throw new VerifyError('revoked', 'the grant of this token was revoked');
    } else if (feed.revoked.has(claims.client_id)) {
      throw new VerifyError('revoked', 'the API key of this token was revoked');
    }
    const keyExpires = feed.expiring.get(claims.client_id);
    if (keyExpires !== undefined && now >= keyExpires) {
      throw new VerifyError('revoked', 'the API key of this token expired after its rotation');
    }
    if (known.allowed !== undefined && !known.allowed.allows(options.clientAddress)) throw addressNotAllowed();
    // Issued before this stream began: what happened to it before then is only known to introspection.
    let scopes = claims.iat <= feed.startTime ? await this.confirmed(token, known) : known.scopes;
    const allowed = feed.allowed.get(`${claims.org} ${claims.sub}`);
    // A role bounds Gatehouse's permissions only: a resource server's own scopes are not the role's (ADR 0049).
    const { permissions } = this;
    if (allowed !== undefined) {
      scopes = scopes.filter((scope) => allowed.has(scope) || (permissions !== undefined && !permissions.has(scope)));
    }
    return this.access(claims.sub, claims.org, claims.client_id, scopes, options.scopes ?? []);
  }

  private access(
    userId: string,
    organizationId: string,
    credentialId: string,
    scopes: string[],
    required: readonly string[],
  ): VerifiedAccess {
    const missing = required.filter((scope) => !scopes.includes(scope));
    if (missing.length > 0) throw new VerifyError('insufficient_scope', `missing ${missing.join(' ')}`);
    return { userId, organizationId, credentialId, apiKeyId: credentialId, scopes };
  }

  /** The token's claims, verified once and remembered until it expires. */
  private async check(token: string): Promise<KnownToken> {
    let payload: JWTPayload;
    try {
      ({ payload } = await jwtVerify(token, this.jwks, {
        issuer: this.options.issuer,
        audience: this.options.audience,
        typ: 'at+jwt',
        algorithms: ['ES256'],
        requiredClaims: ['iss', 'exp', 'aud', 'sub', 'iat', 'jti', 'client_id'],
      }));
    } catch (error) {
      if (!(error instanceof joseErrors.JOSEError) || JWKS_UNAVAILABLE.has(error.code)) {
        // The JWKS could not be fetched: nothing is known about the token yet.
        throw new VerifyError('feed_stale', "cannot fetch Gatehouse's signing keys");
      }
      if (error instanceof joseErrors.JWTClaimValidationFailed && error.claim === 'aud') {
        throw wrongAudience(error.payload.aud, this.options.audience);
      }
      throw new VerifyError('invalid_token', `the token is not a valid Gatehouse access token (${error.code})`);
    }
    const claims = payload as AccessClaims;
    if (typeof claims.org !== 'string' || typeof claims.client_id !== 'string' || payload.token_use !== 'access') {
      throw new VerifyError('invalid_token', 'the token is not a Gatehouse access token');
    }
    if (claims.grant_id !== undefined && typeof claims.grant_id !== 'string') {
      throw new VerifyError('invalid_token', 'the token is not a Gatehouse access token (grant_id)');
    }
    const cidrs: unknown = claims.allowed_cidrs;
    if (cidrs !== undefined && !(Array.isArray(cidrs) && cidrs.every((cidr) => typeof cidr === 'string'))) {
      throw new VerifyError('invalid_token', 'the token is not a Gatehouse access token (allowed_cidrs)');
    }
    // Concurrent first verifies of one token share one entry (and so its confirmation).
    const existing = this.verified.get(token);
    if (existing !== undefined) return existing;
    const known: KnownToken = { claims, scopes: splitScope(claims.scope), expiresMs: claims.exp * 1000 };
    if (claims.allowed_cidrs !== undefined) known.allowed = new AddressList(claims.allowed_cidrs);
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, known);
    return known;
  }

  /** The live scopes of a token issued before the stream's start: asked once, kept until introspection's `exp`. */
  private async confirmed(token: string, known: KnownToken): Promise<string[]> {
    let confirmation = known.confirmation;
    const current =
      confirmation !== undefined &&
      (!confirmation.active || (confirmation.epoch === this.feed.epoch && confirmation.untilMs > Date.now()));
    if (!current) {
      let pending = this.confirming.get(token);
      if (pending === undefined) {
        pending = this.introspectOnce(token, known).finally(() => this.confirming.delete(token));
        this.confirming.set(token, pending);
      }
      confirmation = await pending;
    }
    if (!confirmation!.active) throw new VerifyError('revoked', 'the token is no longer active at Gatehouse');
    return confirmation!.scopes;
  }

  private async introspectOnce(token: string, known: KnownToken): Promise<Confirmation> {
    // Taken before the call: an answer that raced a new stream holds only for the old one.
    const epoch = this.feed.epoch;
    let body: Record<string, unknown>;
    try {
      body = await this.client.introspect(token);
    } catch {
      throw new VerifyError('feed_stale', 'cannot confirm a token issued before this verifier started');
    }
    const confirmation: Confirmation =
      body.active === true
        ? {
            active: true,
            epoch,
            scopes: splitScope(body.scope),
            // The earlier of the token's expiry and its key's (a rotation's grace).
            untilMs: (typeof body.exp === 'number' ? Math.min(body.exp, known.claims.exp) : known.claims.exp) * 1000,
          }
        : { active: false };
    known.confirmation = confirmation;
    return confirmation;
  }

  /** RFC 7662 at Gatehouse, for a stale feed when asked to: the live state, one call per token. */
  private async introspect(
    token: string,
    required: readonly string[],
    clientAddress: string | undefined,
  ): Promise<VerifiedAccess> {
    let body: Record<string, unknown>;
    try {
      body = await this.client.introspect(token);
    } catch {
      throw new VerifyError('feed_stale', 'the revocation feed is stale and introspection failed');
    }
    if (body.active !== true) throw new VerifyError('invalid_token', 'the token is not active');
    // The key's allowlist as Gatehouse holds it now.
    const cidrs = body.allowed_cidrs;
    if (cidrs !== undefined) {
      const list = new AddressList(Array.isArray(cidrs) ? cidrs.filter((c): c is string => typeof c === 'string') : []);
      if (!list.allows(clientAddress)) throw addressNotAllowed();
    }
    return this.access(String(body.sub), String(body.org), String(body.client_id), splitScope(body.scope), required);
  }
}

/**
 * A token Gatehouse signed for another audience: its default one (minted without `resource`) or another resource
 * server's. Says which, and how to mint one for this resource server (RFC 8707's `resource`); the signature was checked
 * first, so the audience named is Gatehouse's own word.
 */
function wrongAudience(aud: unknown, audience: string): VerifyError {
  const named = (Array.isArray(aud) ? aud : [aud])
    .filter((value): value is string => typeof value === 'string')
    .map((value) => value.replace(/[^\x20-\x7e]/g, '?').slice(0, 200));
  const is = named.length === 0 ? 'has no audience' : `is for ${named.join(', ')}`;
  return new VerifyError(
    'invalid_token',
    `wrong audience: the token ${is}, not this resource server (${audience}); mint it with resource=${audience}`,
  );
}

function addressNotAllowed(): VerifyError {
  return new VerifyError('address_not_allowed', "the token's API key is not allowed from this address");
}

function splitScope(scope: unknown): string[] {
  return typeof scope === 'string' && scope !== '' ? scope.split(' ') : [];
}
