import { Inject, Injectable, Logger } from '@nestjs/common';
import type { webcrypto } from 'node:crypto';
import { CompactJWSHeaderParameters, createRemoteJWKSet, customFetch, errors, FlattenedJWSInput } from 'jose';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { boundedJwksFetch, describeFetchError } from './bounded-fetch';
import { FEDERATION_TIMINGS, FederationTimings } from './federation-timings';
import { discoverIssuer, IssuerMetadata } from './issuer-discovery';

/** The issuer's key for a token's header (kid, alg), as jose's remote key set selects and imports it. */
export type IssuerKeyResolver = (
  header: CompactJWSHeaderParameters,
  token: FlattenedJWSInput,
) => Promise<webcrypto.CryptoKey>;

/** The issuer's keys cannot be had right now: its discovery document or key set did not come (a 503, never a hang). */
export class IssuerUnavailable extends Error {}

const MAX_JWKS_BYTES = 256 * 1024;

interface KnownIssuer {
  metadata: IssuerMetadata;
  /** When the metadata is to be fetched again (ms since the epoch). */
  refreshAt: number;
  keys: IssuerKeyResolver;
}

/**
 * Each trusted issuer's signing keys, through its discovery document and jose's remote key set: fetched once, kept,
 * fetched again for an unknown `kid` (at most once per cooldown) and when old (docs/adr/0036-federation.md). Every
 * fetch is held to the outbound address rules (bounded-fetch.ts), and a key set announced on another origin than the
 * issuer's or an allowed one is refused (docs/federation.md#discovery): as an issuer that is down, the last metadata
 * stays in use, and without one the token's exchange answers 503.
 */
@Injectable()
export class IssuerKeys {
  private readonly logger = new Logger('Federation');
  private readonly known = new Map<string, KnownIssuer>();
  /** Discoveries under way, shared by concurrent verifications. */
  private readonly discovering = new Map<string, Promise<KnownIssuer>>();

  constructor(
    @InjectConfig() private readonly config: AppConfiguration,
    @Inject(FEDERATION_TIMINGS) private readonly timings: FederationTimings,
  ) {}

  /**
   * The key resolver of `issuer`, whose key set may be on its own origin or one of `allowedOrigins` (kept apart from
   * the same issuer's with other origins allowed); rejects with IssuerUnavailable.
   */
  async keysOf(issuer: string, allowedOrigins: readonly string[]): Promise<IssuerKeyResolver> {
    const origins = [...new Set(allowedOrigins)].sort();
    const key = JSON.stringify([issuer, origins]);
    const known = this.known.get(key);
    if (known !== undefined && Date.now() < known.refreshAt) return known.keys;
    try {
      return (await this.discover(key, issuer, origins)).keys;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (known === undefined) throw new IssuerUnavailable(message);
      // The last metadata stays in use; the next attempt waits a cooldown, so an outage does not slow every token.
      known.refreshAt = Date.now() + this.timings.jwksCooldownMs;
      this.logger.warn({ issuer, error: message }, 'issuer metadata refresh failed; keeping the last one');
      return known.keys;
    }
  }

  private discover(key: string, issuer: string, allowedOrigins: readonly string[]): Promise<KnownIssuer> {
    let pending = this.discovering.get(key);
    if (pending === undefined) {
      pending = this.load(key, issuer, allowedOrigins).finally(() => this.discovering.delete(key));
      this.discovering.set(key, pending);
    }
    return pending;
  }

  private async load(key: string, issuer: string, allowedOrigins: readonly string[]): Promise<KnownIssuer> {
    const metadata = await discoverIssuer(issuer, {
      production: this.config.production,
      timeoutMs: this.timings.httpTimeoutMs,
      allowedOrigins,
      privateNetworks: this.config.identityProviderNetworks,
    });
    const previous = this.known.get(key);
    const keys =
      previous !== undefined && previous.metadata.jwksUri === metadata.jwksUri
        ? previous.keys
        : this.remoteKeys(metadata.jwksUri);
    const known = { metadata, refreshAt: Date.now() + this.timings.metadataMaxAgeMs, keys };
    this.known.set(key, known);
    return known;
  }

  private remoteKeys(jwksUri: string): IssuerKeyResolver {
    const remote = createRemoteJWKSet(new URL(jwksUri), {
      timeoutDuration: this.timings.httpTimeoutMs,
      cooldownDuration: this.timings.jwksCooldownMs,
      cacheMaxAge: this.timings.jwksMaxAgeMs,
      [customFetch]: boundedJwksFetch(MAX_JWKS_BYTES, !this.config.production, this.config.identityProviderNetworks),
    });
    return async (header, token) => {
      try {
        return await remote(header, token);
      } catch (error) {
        // No key for the token's kid (after a fetch, or within the cooldown): the token's fault, not the issuer's.
        if (error instanceof errors.JWKSNoMatchingKey || error instanceof errors.JWKSMultipleMatchingKeys) throw error;
        const cause =
          error instanceof errors.JWKSTimeout
            ? `no answer within ${this.timings.httpTimeoutMs / 1000} s`
            : describeFetchError(error, this.timings.httpTimeoutMs);
        throw new IssuerUnavailable(`cannot fetch the key set ${jwksUri}: ${cause}`);
      }
    };
  }
}
