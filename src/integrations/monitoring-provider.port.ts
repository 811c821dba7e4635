import type { MonitoringSite } from './monitoring-sites';
import type { KeysStatus, PermissionStatus } from './validation-outcome';

/**
 * The monitoring provider as the service sees it (STYLE.md: an outside provider behind an
 * interface, one adapter per vendor). The only adapter is Datadog's (datadog.adapter.ts); tests
 * run it against a fake Datadog on loopback rather than replacing it.
 */
export interface MonitoringCredentials {
  apiKey: string;
  applicationKey: string;
  site: MonitoringSite;
}

/** Steps 1-2 of INTEGRATIONS.md section 2 could not be answered (429, 5xx, timeout after retries). */
export class ProviderUnavailableError extends Error {
  constructor(reason: string) {
    super(reason);
    this.name = 'ProviderUnavailableError';
  }
}

export interface MonitoringProvider {
  /** Whether the provider accepts both keys; rejects with ProviderUnavailableError when it cannot tell. */
  checkKeys(credentials: MonitoringCredentials): Promise<KeysStatus>;
  /**
   * A status for each permission of the catalogue. Provider trouble never rejects: the checks it
   * affects are Unknown (INTEGRATIONS.md section 1).
   */
  checkPermissions(credentials: MonitoringCredentials): Promise<Map<string, PermissionStatus>>;
}

export const MONITORING_PROVIDER = Symbol('MONITORING_PROVIDER');
