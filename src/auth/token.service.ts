import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { InjectConfig, InjectSecrets } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import type { Secrets } from '../config/local-secrets';
import { AppError } from '../common/errors';
import { ALL_PERMISSIONS, isPermission, PermissionMask, scopeClaimMask, scopeString } from '../identity/roles';
import { JwtSigner } from './jwt-signer';
import { JWT_ALGORITHM, SigningKeys } from './signing-keys';
import { UUID } from '../common/uuid';
import type { KeyRateLimit } from '../api-keys/key-policies';

export type TokenUse = 'access' | 'session';

/** Claims of our tokens (docs/api.md, "Access and session tokens"). */
export interface TokenClaims {
  iss: string;
  aud: string;
  sub: string;
  org: string;
  jti: string;
  iat: number;
  exp: number;
  token_use: TokenUse;
  /** Access tokens: the API key id (RFC 9068 section 2.2); read from `akid` for a token minted before it was dropped. */
  client_id?: string;
  /**
   * The key id again, in access tokens minted by earlier versions (no longer minted: it only repeated `client_id`). Read
   * only until every such token has expired (24 h at most after the upgrade); then this can go.
   */
  akid?: string;
  /** Access tokens: the granted permissions, space-separated, in catalogue order (docs/api.md#scopes). */
  scope?: string;
  /** Access tokens minted through a workload identity (its id is `client_id`); absent for an API key's. */
  client_type?: 'workload_identity';
  /** Access tokens of a key with an allowlist: its CIDRs, for verifiers (docs/api.md#access-and-session-tokens). */
  allowed_cidrs?: string[];
  /** Access tokens of a person's grant (docs/mcp.md): its id; `client_id` is then the OAuth client's. */
  grant_id?: string;
}

/** A token that verified, as the Bearer guard uses it; made once per token and remembered with it. */
export interface VerifiedToken {
  claims: TokenClaims;
  /** The token's own `scope` as a mask; every permission for a session token (its role decides). */
  permissions: PermissionMask;
}

export interface MintRequest {
  userId: string;
  organizationId: string;
  lifetimeSeconds: number;
  tokenUse: TokenUse;
  credentialId?: string;
  /** Access tokens: the `scope` claim. */
  scope?: string;
  /** The issue time in milliseconds (default: now); access tokens use the instant the key was checked at. */
  issuedAtMs?: number;
  /** `aud`: a registered resource server's audience (RFC 8707); default: JWT_AUDIENCE. */
  audience?: string;
  /** Access tokens: minted through a workload identity (`credentialId` is its id). */
  workloadIdentity?: boolean;
  /** Access tokens: the key's allowlist as stored (comma-separated CIDRs), carried as `allowed_cidrs`. */
  allowedCidrs?: string | null;
  /** Access tokens of a grant: its id (`grant_id`) and its OAuth client (`client_id`, instead of `apiKeyId`). */
  grant?: { id: string; clientId: string };
}

/** An authenticated POST /v1/token (ApiKeyGuard): the key, its owner and what a token of it may get. */
export interface ApiKeyExchange {
  userId: string;
  organizationId: string;
  credentialId: string;
  /** The organization's access-token lifetime, in seconds. */
  lifetimeSeconds: number;
  /** The key's scopes. */
  scopes: PermissionMask;
  /** What the owner's role allows now. */
  rolePermissions: PermissionMask;
  /** The key's expires_at in milliseconds; null: never. */
  expiresAtMs: number | null;
  /** When the key was checked: the token is issued at this instant. */
  checkedAtMs: number;
  /** The client's address as the failure limit counted it (docs/api.md#usage-fields). */
  clientAddress: string | undefined;
  /** A workload identity's exchange (`credentialId` is the identity's id): the token says so in `client_type`. */
  workloadIdentity?: true;
  /** A workload identity's exchange: the subject token's `sub`, for its `workload_identity.exchanged` entry. */
  subject?: string;
  /** The key's allowlist as stored; null or absent: any address (docs/api.md#allowlists-and-rate-limits). */
  allowedCidrs?: string | null;
  /** The key's rate limit; null or absent: none. */
  rateLimit?: KeyRateLimit | null;
}

/** The optional narrowing of POST /v1/token's body (names and range already validated). */
export interface TokenNarrowing {
  scope?: string;
  expiresIn?: number;
  /** RFC 8707: a registered resource server's audience, the token's `aud`. */
  resource?: string;
}

/** What an access token gets: its `scope` and lifetime. */
export interface AccessGrant {
  scope: string;
  lifetimeSeconds: number;
}

/** Why a token did not verify: one of ours past its `exp`, or not one of ours (signature, key id, issuer, claims). */
export type TokenVerificationFailure = 'expired' | 'invalid';

/** Verified tokens kept in memory (about 1 KB each). */
const VERIFIED_CACHE_SIZE = 10_000;

/**
 * The payload as our claims, or null when it is not a token of ours. An access token's key id is `client_id`; one minted
 * before `akid` was dropped carries it in both (equal), and leaves here with `client_id` set, so readers read only that.
 */
function tokenClaims(payload: unknown): TokenClaims | null {
  if (typeof payload !== 'object' || payload === null) return null;
  const p = payload as Record<string, unknown>;
  const common =
    typeof p.sub === 'string' &&
    UUID.test(p.sub) &&
    typeof p.org === 'string' &&
    UUID.test(p.org) &&
    typeof p.jti === 'string' &&
    typeof p.aud === 'string' &&
    typeof p.exp === 'number';
  if (!common) return null;
  if (p.token_use === 'session') {
    return p.client_id === undefined &&
      p.akid === undefined &&
      p.scope === undefined &&
      p.client_type === undefined &&
      p.allowed_cidrs === undefined
      ? (p as unknown as TokenClaims)
      : null;
  }
  if (p.token_use !== 'access' || !(p.scope === undefined || typeof p.scope === 'string')) return null;
  if (p.grant_id !== undefined) return grantClaims(p);
  if (!(p.client_type === undefined || p.client_type === 'workload_identity')) return null;
  if (!(p.allowed_cidrs === undefined || isStringArray(p.allowed_cidrs))) return null;
  const keyId = p.client_id ?? p.akid;
  if (typeof keyId !== 'string' || !UUID.test(keyId) || (p.akid !== undefined && p.akid !== keyId)) return null;
  p.client_id = keyId;
  return p as unknown as TokenClaims;
}

/** A grant's access token: its id a UUID, its client any non-empty id, nothing of a key's. */
function grantClaims(p: Record<string, unknown>): TokenClaims | null {
  const valid =
    typeof p.grant_id === 'string' &&
    UUID.test(p.grant_id) &&
    typeof p.client_id === 'string' &&
    p.client_id !== '' &&
    p.akid === undefined &&
    p.client_type === undefined &&
    p.allowed_cidrs === undefined;
  return valid ? (p as unknown as TokenClaims) : null;
}

function isStringArray(value: unknown): value is string[] {
  return Array.isArray(value) && value.every((item) => typeof item === 'string');
}

/**
 * A token's scope at a resource server that declares scopes: those asked for, each declared (else 400 invalid_scope),
 * or all of them when none is asked for; in the declared order.
 */
function declaredScope(asked: string | undefined, declared: readonly string[]): string {
  if (asked === undefined) return declared.join(' ');
  const names = new Set(asked.split(' '));
  const undeclared = [...names].filter((name) => !declared.includes(name));
  if (undeclared.length > 0) {
    throw new AppError('scope_not_declared', {
      oauthDescription: `the resource does not declare the scope ${undeclared.join(' ')}`,
    });
  }
  return declared.filter((name) => names.has(name)).join(' ');
}

/** RFC 9068 section 2.1: access tokens are typed `at+jwt`; session tokens are plain JWTs. */
function joseType(tokenUse: TokenUse): 'at+jwt' | 'JWT' {
  return tokenUse === 'access' ? 'at+jwt' : 'JWT';
}

/** Signs and verifies access and session tokens (ES256, `kid` and `typ` in the header). */
@Injectable()
export class TokenService {
  readonly keys: SigningKeys;
  private readonly verified = new Map<string, VerifiedToken>();
  private readonly issuer: string;
  /** The default audience: Gatehouse's own API accepts only tokens for it. */
  readonly audience: string;

  constructor(
    private readonly jwt: JwtService,
    private readonly signer: JwtSigner,
    @InjectConfig() config: AppConfiguration,
    @InjectSecrets() secrets: Secrets,
  ) {
    this.keys = new SigningKeys(secrets.jwtPrivateKeyPem, config.jwt.previousPublicKeyPems);
    this.issuer = config.jwt.issuer;
    this.audience = config.jwt.audience;
  }

  /**
   * An exchange's scope and lifetime (docs/api.md#post-v1token): `exp` never passes the key's expires_at. For a resource
   * server that declares scopes (`declared`, non-empty), the scope is among them and the key's permissions do not
   * enter (docs/adr/0049-resource-server-scopes.md).
   */
  accessGrant(exchange: ApiKeyExchange, narrowing: TokenNarrowing, declared: readonly string[] = []): AccessGrant {
    const lifetimeSeconds = this.lifetime(exchange, narrowing);
    if (declared.length > 0) return { scope: declaredScope(narrowing.scope, declared), lifetimeSeconds };
    let scopes = exchange.scopes;
    if (narrowing.scope !== undefined) {
      if (!narrowing.scope.split(' ').every(isPermission)) {
        throw new AppError('scope_not_a_permission', {
          oauthDescription: 'scope must be distinct permission names separated by spaces',
        });
      }
      scopes = scopeClaimMask(narrowing.scope);
      if ((scopes & ~exchange.scopes) !== 0) {
        // POST /oauth/token names it invalid_scope (RFC 6749 section 5.2).
        throw new AppError('scope_not_granted', {
          oauthDescription: "the scope asks for a permission the key's scopes do not grant",
        });
      }
    }
    // A resource server cannot read the role per request as Gatehouse does: its token says what the role allows now.
    if (narrowing.resource !== undefined) scopes &= exchange.rolePermissions;
    return { scope: scopeString(scopes), lifetimeSeconds };
  }

  private lifetime(exchange: ApiKeyExchange, narrowing: TokenNarrowing): number {
    const lifetimeSeconds = Math.min(narrowing.expiresIn ?? exchange.lifetimeSeconds, exchange.lifetimeSeconds);
    if (exchange.expiresAtMs === null) return lifetimeSeconds;
    const left = Math.floor(exchange.expiresAtMs / 1000) - Math.floor(exchange.checkedAtMs / 1000);
    return Math.min(lifetimeSeconds, left);
  }

  /** A new signed token; the signature is computed off the event loop (JwtSigner). */
  mint(request: MintRequest): Promise<string> {
    const iat = Math.floor((request.issuedAtMs ?? Date.now()) / 1000);
    const claims: TokenClaims = {
      iss: this.issuer,
      aud: request.audience ?? this.audience,
      sub: request.userId,
      org: request.organizationId,
      jti: randomUUID(),
      iat,
      exp: iat + request.lifetimeSeconds,
      token_use: request.tokenUse,
    };
    if (request.credentialId !== undefined) claims.client_id = request.credentialId;
    if (request.scope !== undefined) claims.scope = request.scope;
    if (request.workloadIdentity === true) claims.client_type = 'workload_identity';
    if (request.allowedCidrs != null) claims.allowed_cidrs = request.allowedCidrs.split(',');
    if (request.grant !== undefined) {
      claims.client_id = request.grant.clientId;
      claims.grant_id = request.grant.id;
    }
    return this.signer.sign(claims, this.keys.signingKey, this.keys.signingKid, joseType(request.tokenUse));
  }

  /**
   * Claims of a valid token of ours for Gatehouse's own API (the default audience), or null. Verified tokens are
   * remembered until they expire, so the ECDSA check runs once per token; membership and key status are still read on
   * every request (docs/adr/0004-authorization-read-on-every-request.md).
   */
  forOwnApi(token: string): VerifiedToken | null {
    const verified = this.verifiedToken(token);
    return verified !== null && verified.claims.aud === this.audience ? verified : null;
  }

  /** A valid token of ours whatever its audience (introspection and forward auth check the audience themselves). */
  verifiedToken(token: string): VerifiedToken | null {
    const verified = this.verification(token);
    return typeof verified === 'string' ? null : verified;
  }

  /** A valid token of ours whatever its audience; else whether it is one of ours past its `exp`, or no token of ours. */
  verification(token: string): VerifiedToken | TokenVerificationFailure {
    const known = this.verified.get(token);
    if (known !== undefined) {
      if (Math.floor(Date.now() / 1000) < known.claims.exp) return known;
      this.verified.delete(token);
      return 'expired';
    }
    const claims = this.verifySignatureAndClaims(token);
    if (typeof claims === 'string') return claims;
    const verified: VerifiedToken = {
      claims,
      // A grant's scopes are its resource server's, never Gatehouse's permissions.
      permissions:
        claims.grant_id !== undefined ? 0 : claims.scope === undefined ? ALL_PERMISSIONS : scopeClaimMask(claims.scope),
    };
    if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
    this.verified.set(token, verified);
    return verified;
  }

  /** The claims of a valid token of ours, or null (see authenticate). */
  verify(token: string): TokenClaims | null {
    return this.forOwnApi(token)?.claims ?? null;
  }

  private verifySignatureAndClaims(token: string): TokenClaims | TokenVerificationFailure {
    try {
      const decoded = this.jwt.decode<{ header?: { kid?: unknown; alg?: unknown } } | null>(token, { complete: true });
      const kid = decoded?.header?.kid;
      if (typeof kid !== 'string' || decoded?.header?.alg !== JWT_ALGORITHM) return 'invalid';
      const key = this.keys.verificationKey(kid);
      if (key === undefined) return 'invalid';
      const payload: unknown = this.jwt.verify(token, {
        // jsonwebtoken takes a KeyObject; @nestjs/jwt's option type predates that.
        publicKey: key as unknown as Buffer,
        algorithms: [JWT_ALGORITHM],
        issuer: this.issuer,
      });
      return tokenClaims(payload) ?? 'invalid';
    } catch (error) {
      // jsonwebtoken checks `exp` after the signature: an expired token is one of ours.
      return error instanceof Error && error.name === 'TokenExpiredError' ? 'expired' : 'invalid';
    }
  }
}
