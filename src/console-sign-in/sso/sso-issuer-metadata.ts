import { Inject, Injectable, Logger } from '@nestjs/common';
import { InjectConfig } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import { discoverIssuer, IssuerMetadata } from '../../federation/issuer-discovery';
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

  async of(issuer: string): Promise<IssuerMetadata> {
    const known = this.known.get(issuer);
    if (known !== undefined && Date.now() < known.refreshAt) return known.metadata;
    try {
      return await this.discover(issuer);
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

  private discover(issuer: string): Promise<IssuerMetadata> {
    let pending = this.discovering.get(issuer);
    if (pending === undefined) {
      pending = discoverIssuer(issuer, { production: this.config.production, timeoutMs: this.settings.httpTimeoutMs })
        .then((metadata) => {
          this.known.set(issuer, { metadata, refreshAt: Date.now() + this.settings.metadataMaxAgeMs });
          return metadata;
        })
        .finally(() => this.discovering.delete(issuer));
      this.discovering.set(issuer, pending);
    }
    return pending;
  }
}
