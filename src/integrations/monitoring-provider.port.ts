import type { Deadline } from './deadline';
import type { MonitoringSite } from './monitoring-sites';
import type { KeysStatus, PermissionStatus } from './validation-outcome';

/**
 * The monitoring provider as the service sees it (docs/architecture.md#code-conventions: an outside provider behind an
 * interface, one adapter per vendor).
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

/**
 * Both methods take the validation's deadline: once it passes, the calls in flight are aborted and
 * the method rejects with its DeadlineExceededError (docs/integrations.md#limits).
 */
export interface MonitoringProvider {
  /** Whether the provider accepts both keys; rejects with ProviderUnavailableError when it cannot tell. */
  checkKeys(credentials: MonitoringCredentials, deadline?: Deadline): Promise<KeysStatus>;
  /**
   * A status for each permission of the catalogue. Provider trouble never rejects: the checks it
   * affects are Unknown (docs/integrations.md#the-fourteen-permission-checks).
   */
  checkPermissions(credentials: MonitoringCredentials, deadline?: Deadline): Promise<Map<string, PermissionStatus>>;
}

export const MONITORING_PROVIDER = Symbol('MONITORING_PROVIDER');
