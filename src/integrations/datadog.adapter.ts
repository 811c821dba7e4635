import type { Deadline } from './deadline';
import { PERMISSION_CATALOGUE } from './permission-catalogue';
import { MonitoringCredentials, MonitoringProvider, ProviderUnavailableError } from './monitoring-provider.port';
import { siteBaseUrl } from './monitoring-sites';
import { isRetryableStatus, ProviderHttpClient, ProviderResponse } from './provider-http-client';
import type { KeysStatus, PermissionStatus } from './validation-outcome';

export interface DatadogAdapterOptions {
  /** Config MONITORING_API_BASE_URL: every site's calls go there (tests, local trials). */
  baseUrlOverride?: string;
  concurrency: number;
  now?: () => Date;
  /** Where surprising answers are reported; never given keys or headers. */
  log?: (message: string, context: Record<string, unknown>) => void;
  /** Told how each call ended (gatehouse_provider_calls_total, docs/operations.md#metrics). */
  onCall?: (check: string, outcome: ProviderCallOutcome) => void;
}

/** How one provider call ended, retries included (see callOutcome for the status mapping). */
export type ProviderCallOutcome =
  'ok' | 'denied' | 'unavailable' | 'unexpected' | 'timeout' | 'network_error' | 'deadline_exceeded';

/** The `check` label values; endpoint probes use their permission name. */
const API_KEY_CHECK = 'validate_api_key';
const KEYS_CHECK = 'validate_keys';
const OWNER_CHECK = 'owner_permissions';

function callOutcome(response: ProviderResponse): ProviderCallOutcome {
  if (response.kind !== 'answered') return response.kind;
  const { status } = response;
  if (status >= 200 && status < 300) return 'ok';
  if (status === 401 || status === 403) return 'denied';
  return isRetryableStatus(status) ? 'unavailable' : 'unexpected';
}

const CURRENT_USER = '/api/v2/current_user';

/** fetch would trim or refuse a non-visible-ASCII header, and the provider issues no such keys: Invalid, no call. */
const SENDABLE_KEY = /^[\x21-\x7e]+$/;

/** At most `limit` pending, input order kept; after a rejection (a passed deadline) nothing new starts. */
export async function mapWithConcurrency<T, R>(
  items: readonly T[],
  limit: number,
  fn: (item: T) => Promise<R>,
): Promise<R[]> {
  const results = new Array<R>(items.length);
  let next = 0;
  let failed = false;
  const worker = async (): Promise<void> => {
    while (next < items.length && !failed) {
      const index = next++;
      try {
        results[index] = await fn(items[index]);
      } catch (error) {
        failed = true;
        throw error;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, items.length)) }, worker));
  return results;
}

/**
 * Datadog's HTTP API (docs/integrations.md), only GETs, through our own client
 * (docs/adr/0007-plain-fetch-provider-client.md).
 */
export class DatadogAdapter implements MonitoringProvider {
  private readonly now: () => Date;

  constructor(
    private readonly http: ProviderHttpClient,
    private readonly options: DatadogAdapterOptions,
  ) {
    this.now = options.now ?? (() => new Date());
  }

  async checkKeys(credentials: MonitoringCredentials, deadline?: Deadline): Promise<KeysStatus> {
    if (!SENDABLE_KEY.test(credentials.apiKey) || !SENDABLE_KEY.test(credentials.applicationKey)) return 'Invalid';
    // Step 1: the API key alone; only 200 {"valid": true} is a "yes".
    const apiKey = await this.call(API_KEY_CHECK, credentials, '/api/v1/validate', {}, true, deadline);
    const first = this.keyAnswer(apiKey, '/api/v1/validate');
    if (first === 'Invalid') return 'Invalid';
    const valid = apiKey.kind === 'answered' ? (apiKey.body as { valid?: unknown } | undefined)?.valid : undefined;
    if (valid === false) return 'Invalid';
    if (valid !== true) throw new ProviderUnavailableError('unexpected answer to /api/v1/validate');
    const both = await this.call(KEYS_CHECK, credentials, '/api/v2/validate_keys', {}, false, deadline);
    return this.keyAnswer(both, '/api/v2/validate_keys');
  }

  async checkPermissions(
    credentials: MonitoringCredentials,
    deadline?: Deadline,
  ): Promise<Map<string, PermissionStatus>> {
    const now = this.now();
    const statuses = new Map<string, PermissionStatus>();
    const owner = PERMISSION_CATALOGUE.filter((check) => check.probe.kind === 'owner').map((check) => check.name);
    type Task = () => Promise<void>;
    const tasks: Task[] = PERMISSION_CATALOGUE.flatMap((check): Task[] =>
      check.probe.kind === 'endpoint'
        ? [
            async () => {
              const probe = check.probe as Extract<typeof check.probe, { kind: 'endpoint' }>;
              const response = await this.call(check.name, credentials, probe.path, probe.query(now), false, deadline);
              statuses.set(check.name, this.probeStatus(response, check.name, probe.path));
            },
          ]
        : [],
    );
    if (owner.length > 0) {
      tasks.push(async () => {
        for (const [name, status] of await this.ownerPermissions(credentials, owner, deadline)) {
          statuses.set(name, status);
        }
      });
    }
    await mapWithConcurrency(tasks, this.options.concurrency, (task) => task());
    return statuses;
  }

  private async ownerPermissions(
    credentials: MonitoringCredentials,
    names: string[],
    deadline: Deadline | undefined,
  ): Promise<Array<[string, PermissionStatus]>> {
    const response = await this.call(OWNER_CHECK, credentials, CURRENT_USER, {}, true, deadline);
    const granted = response.kind === 'answered' && response.status === 200 ? includedPermissions(response.body) : null;
    if (granted === null) {
      this.report(response, 'owner permissions unknown', { path: CURRENT_USER });
      return names.map((name) => [name, 'Unknown']);
    }
    return names.map((name) => [name, granted.has(name) ? 'Granted' : 'Missing']);
  }

  private probeStatus(response: ProviderResponse, permission: string, path: string): PermissionStatus {
    if (response.kind === 'answered' && response.status >= 200 && response.status < 300) return 'Granted';
    if (response.kind === 'answered' && response.status === 403) return 'Missing';
    this.report(response, 'permission check unknown', { permission, path });
    return 'Unknown';
  }

  /** Anything but 200/401/403 means the provider could not tell us. */
  private keyAnswer(response: ProviderResponse, path: string): KeysStatus {
    if (response.kind === 'answered' && (response.status === 401 || response.status === 403)) return 'Invalid';
    if (response.kind === 'answered' && response.status === 200) return 'Working';
    this.report(response, 'key validation failed', { path });
    throw new ProviderUnavailableError(`${path} ${describe(response)}`);
  }

  private async call(
    check: string,
    credentials: MonitoringCredentials,
    path: string,
    query: Record<string, string>,
    readBody: boolean,
    deadline: Deadline | undefined,
  ): Promise<ProviderResponse> {
    const url = new URL(path, siteBaseUrl(credentials.site, this.options.baseUrlOverride));
    for (const [name, value] of Object.entries(query)) url.searchParams.set(name, value);
    let response: ProviderResponse;
    try {
      response = await this.http.get({
        url,
        readBody,
        deadline,
        headers: {
          Accept: 'application/json',
          'DD-API-KEY': credentials.apiKey,
          'DD-APPLICATION-KEY': credentials.applicationKey,
        },
      });
    } catch (error) {
      // ProviderHttpClient rejects only once the validation's deadline has passed.
      this.options.onCall?.(check, 'deadline_exceeded');
      throw error;
    }
    this.options.onCall?.(check, callOutcome(response));
    return response;
  }

  private report(response: ProviderResponse, message: string, context: Record<string, unknown>): void {
    this.options.log?.(message, {
      ...context,
      outcome: describe(response),
      attempts: response.attempts,
      // 400 means our request was wrong: a bug to fix, not provider weather.
      ...(response.kind === 'answered' && response.status === 400 ? { bug: true } : {}),
    });
  }
}

function describe(response: ProviderResponse): string {
  switch (response.kind) {
    case 'answered':
      return `HTTP ${response.status}`;
    case 'timeout':
      return 'timeout';
    case 'network_error':
      return 'network error';
  }
}

function includedPermissions(body: unknown): Set<string> | null {
  const included = (body as { included?: unknown } | undefined)?.included;
  if (!Array.isArray(included)) return null;
  const names = new Set<string>();
  for (const entry of included as unknown[]) {
    const item = entry as { type?: unknown; attributes?: { name?: unknown } } | null;
    if (item?.type === 'permissions' && typeof item.attributes?.name === 'string') names.add(item.attributes.name);
  }
  return names;
}
