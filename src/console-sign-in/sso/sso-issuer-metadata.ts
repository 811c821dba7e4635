import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import { discoverIssuer, DiscoveryError, IssuerMetadata, metadataProblem } from '../../federation/issuer-discovery';
import type { TrustedIssuer } from '../../federation/trusted-issuer.entity';
import { SSO_SETTINGS, SsoSettings } from './sso-settings';

interface KnownMetadata {
  metadata: IssuerMetadata;
  /** When to fetch it again (ms since the epoch). */
  refreshAt: number;
}

/** After a failed refresh, the last document is used this long before the next attempt. */
const RETRY_AFTER_FAILURE_MS = 10_000;

/**
 * The people issuers' discovery documents (their authorization and token endpoints), through federation's discovery
 * (the document's `issuer` equal to the configured one, https only, bounded time and size): fetched at an issuer's first
 * sign-in, again after an hour; a failed refresh keeps the last one, so an outage of the document alone stops no one.
 * Rejects with federation's DiscoveryError when there is no document yet.
 */
@Injectable()
export class SsoIssuerMetadata {
  private readonly logger = new Logger('ConsoleSso');
  private readonly known = new Map<string, KnownMetadata>();
  /** Discoveries under way, shared by concurrent sign-ins. */
  private readonly discovering = new Map<string, Promise<IssuerMetadata>>();

  constructor(
    @InjectConfig() private readonly config: AppConfiguration,
    @Inject(SSO_SETTINGS) private readonly settings: SsoSettings,
  ) {}

  /** The document of the entry's issuer, its endpoints on the issuer's origin or one the entry allows. */
  async of(entry: Pick<TrustedIssuer, 'issuer' | 'allowedOrigins'>): Promise<IssuerMetadata> {
    const { issuer } = entry;
    const allowedOrigins = [...new Set(entry.allowedOrigins)].sort();
    const key = JSON.stringify([issuer, allowedOrigins]);
    const known = this.known.get(key);
    if (known !== undefined && Date.now() < known.refreshAt) return known.metadata;
    try {
      return await this.discover(key, issuer, allowedOrigins);
    } catch (error) {
      if (known === undefined) throw error;
      known.refreshAt = Date.now() + RETRY_AFTER_FAILURE_MS;
      this.logger.warn(
        { issuer, error: (error as Error).message },
        'issuer metadata refresh failed; keeping the last one',
      );
      return known.metadata;
    }
  }

  private discover(key: string, issuer: string, allowedOrigins: string[]): Promise<IssuerMetadata> {
    let pending = this.discovering.get(key);
    if (pending === undefined) {
      const options = {
        production: this.config.production,
        timeoutMs: this.settings.httpTimeoutMs,
        allowedOrigins,
        privateNetworks: this.config.identityProviderNetworks,
      };
      pending = discoverIssuer(issuer, options)
        .then((metadata) => {
          // Endpoints moved to another origin are refused as the document would be: the last one stays in use.
          const problem = metadataProblem(metadata, 'people', null, options);
          if (problem !== null) throw new DiscoveryError(problem.text, problem.foreignOrigin);
          this.known.set(key, { metadata, refreshAt: Date.now() + this.settings.metadataMaxAgeMs });
          return metadata;
        })
        .finally(() => this.discovering.delete(key));
      this.discovering.set(key, pending);
    }
    return pending;
  }
}
