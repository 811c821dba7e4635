import type { Deadline } from './deadline';
import type { MonitoringSite } from './monitoring-sites';
import type { KeysStatus, PermissionStatus } from './validation-outcome';

/** One adapter per vendor behind this interface (docs/architecture.md#code-conventions). */
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

/** Once the deadline passes, calls in flight are aborted and the method rejects (docs/integrations.md#limits). */
export interface MonitoringProvider {
  /** Rejects with ProviderUnavailableError when the provider cannot tell. */
  checkKeys(credentials: MonitoringCredentials, deadline?: Deadline): Promise<KeysStatus>;
  /** Provider trouble never rejects: checks are Unknown (docs/integrations.md#the-fourteen-permission-checks). */
  checkPermissions(credentials: MonitoringCredentials, deadline?: Deadline): Promise<Map<string, PermissionStatus>>;
}

export const MONITORING_PROVIDER = Symbol('MONITORING_PROVIDER');
