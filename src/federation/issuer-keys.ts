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
 * fetched again for an unknown `kid` (at most once per cooldown) and when old (docs/adr/0036-federation.md).
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

  /** The key resolver of `issuer`; rejects with IssuerUnavailable. */
  async keysOf(issuer: string): Promise<IssuerKeyResolver> {
    const known = this.known.get(issuer);
    if (known !== undefined && Date.now() < known.refreshAt) return known.keys;
    try {
      return (await this.discover(issuer)).keys;
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      if (known === undefined) throw new IssuerUnavailable(message);
      // The last metadata stays in use; the next attempt waits a cooldown, so an outage does not slow every token.
      known.refreshAt = Date.now() + this.timings.jwksCooldownMs;
      this.logger.warn({ issuer, error: message }, 'issuer metadata refresh failed; keeping the last one');
      return known.keys;
    }
  }

  private discover(issuer: string): Promise<KnownIssuer> {
    let pending = this.discovering.get(issuer);
    if (pending === undefined) {
      pending = this.load(issuer).finally(() => this.discovering.delete(issuer));
      this.discovering.set(issuer, pending);
    }
    return pending;
  }

  private async load(issuer: string): Promise<KnownIssuer> {
    const metadata = await discoverIssuer(issuer, {
      production: this.config.production,
      timeoutMs: this.timings.httpTimeoutMs,
    });
    const previous = this.known.get(issuer);
    const keys =
      previous !== undefined && previous.metadata.jwksUri === metadata.jwksUri
        ? previous.keys
        : this.remoteKeys(metadata.jwksUri);
    const known = { metadata, refreshAt: Date.now() + this.timings.metadataMaxAgeMs, keys };
    this.known.set(issuer, known);
    return known;
  }

  private remoteKeys(jwksUri: string): IssuerKeyResolver {
    const remote = createRemoteJWKSet(new URL(jwksUri), {
      timeoutDuration: this.timings.httpTimeoutMs,
      cooldownDuration: this.timings.jwksCooldownMs,
      cacheMaxAge: this.timings.jwksMaxAgeMs,
      [customFetch]: boundedJwksFetch(MAX_JWKS_BYTES),
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
