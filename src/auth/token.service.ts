import { randomUUID } from 'node:crypto';
import { Injectable } from '@nestjs/common';
import { JwtService } from '@nestjs/jwt';
import { InjectConfig, InjectSecrets } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import type { Secrets } from '../config/local-secrets';
import { JwtSigner } from './jwt-signer';
import { JWT_ALGORITHM, SigningKeys } from './signing-keys';

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
  akid?: string;
}

export interface MintRequest {
  userId: string;
  organizationId: string;
  lifetimeSeconds: number;
  tokenUse: TokenUse;
  apiKeyId?: string;
}

/** Verified tokens kept in memory (about 1 KB each). */
const VERIFIED_CACHE_SIZE = 10_000;

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function isClaims(payload: unknown): payload is TokenClaims {
  if (typeof payload !== 'object' || payload === null) return false;
  const p = payload as Record<string, unknown>;
  const common =
    typeof p.sub === 'string' &&
    UUID.test(p.sub) &&
    typeof p.org === 'string' &&
    UUID.test(p.org) &&
    typeof p.jti === 'string' &&
    typeof p.exp === 'number';
  if (!common) return false;
  if (p.token_use === 'session') return p.akid === undefined;
  return p.token_use === 'access' && typeof p.akid === 'string' && UUID.test(p.akid);
}

/** Signs and verifies access and session tokens (ES256, `kid` in the header). */
@Injectable()
export class TokenService {
  readonly keys: SigningKeys;
  private readonly verified = new Map<string, TokenClaims>();
  private readonly issuer: string;
  private readonly audience: string;

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

  /** A new signed token; the signature is computed off the event loop (JwtSigner). */
  mint(request: MintRequest): Promise<string> {
    const iat = Math.floor(Date.now() / 1000);
    const claims: TokenClaims = {
      iss: this.issuer,
      aud: this.audience,
      sub: request.userId,
      org: request.organizationId,
      jti: randomUUID(),
      iat,
      exp: iat + request.lifetimeSeconds,
      token_use: request.tokenUse,
    };
    if (request.apiKeyId !== undefined) claims.akid = request.apiKeyId;
    return this.signer.sign(claims, this.keys.signingKey, this.keys.signingKid);
  }

  /**
   * Claims of a valid token of ours, or null: bad signature, unknown kid, expired, wrong iss/aud,
   * alg none. A client sends the same token on every request for its lifetime, so tokens that
   * verified are remembered until they expire (at most VERIFIED_CACHE_SIZE, oldest dropped first)
   * and the ECDSA verification, the costliest step of a Bearer request, runs once per token.
   * Only the signature check is skipped: membership and key status are still read every time.
   */
  verify(token: string): TokenClaims | null {
    const known = this.verified.get(token);
    if (known !== undefined) {
      if (Math.floor(Date.now() / 1000) < known.exp) return known;
      this.verified.delete(token);
      return null;
    }
    const claims = this.verifySignatureAndClaims(token);
    if (claims !== null) {
      if (this.verified.size >= VERIFIED_CACHE_SIZE) this.verified.delete(this.verified.keys().next().value!);
      this.verified.set(token, claims);
    }
    return claims;
  }

  private verifySignatureAndClaims(token: string): TokenClaims | null {
    try {
      const decoded = this.jwt.decode<{ header?: { kid?: unknown; alg?: unknown } } | null>(token, { complete: true });
      const kid = decoded?.header?.kid;
      if (typeof kid !== 'string' || decoded?.header?.alg !== JWT_ALGORITHM) return null;
      const key = this.keys.verificationKey(kid);
      if (key === undefined) return null;
      const payload: unknown = this.jwt.verify(token, {
        // jsonwebtoken takes a KeyObject; @nestjs/jwt's option type predates that.
        publicKey: key as unknown as Buffer,
        algorithms: [JWT_ALGORITHM],
        issuer: this.issuer,
        audience: this.audience,
      });
      return isClaims(payload) ? payload : null;
    } catch {
      return null;
    }
  }
}
