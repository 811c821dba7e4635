import type { MonitoringSite } from './monitoring-sites';
import type { KeysStatus, PermissionStatus } from './validation-outcome';

/**
 * The monitoring provider as the service sees it (docs/architecture.md#code-conventions: an outside provider behind an
 * interface, one adapter per vendor). The only adapter is Datadog's (datadog.adapter.ts); tests
 * run it against a fake Datadog on loopback rather than replacing it.
 */
export interface MonitoringCredentials {
  apiKey: string;
  applicationKey: string;
  site: MonitoringSite;
}

/** Steps 1-2 of docs/integrations.md#validation could not be answered (429, 5xx, timeout after retries). */
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
   * affects are Unknown (docs/integrations.md#the-fourteen-permission-checks).
   */
  checkPermissions(credentials: MonitoringCredentials): Promise<Map<string, PermissionStatus>>;
}

export const MONITORING_PROVIDER = Symbol('MONITORING_PROVIDER');
