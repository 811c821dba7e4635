import { DataSource } from 'typeorm';
import type { Environment } from '../../src/config/configuration';
import { FakeDatadog } from './fakes/fake-datadog';
import { ISO_MS } from './http-assertions';
import { createTestApp, TestApp } from './test-app';

/** docs/integrations.md#the-fourteen-permission-checks, written out again here so the tests do not share the service's table. */
export const CATALOGUE: ReadonlyArray<[name: string, required: boolean]> = [
  ['logs_read_config', true],
  ['metrics_read', true],
  ['dashboards_read', true],
  ['monitors_read', true],
  ['slos_read', true],
  ['notebooks_read', true],
  ['audit_logs_read', false],
  ['logs_live_tail', false],
  ['logs_read_data', false],
  ['logs_read_index_data', false],
  ['usage_notifications_read', false],
  ['usage_read', false],
  ['logs_read_archives', false],
  ['timeseries_query', false],
];
export const REQUIRED = CATALOGUE.filter(([, required]) => required).map(([name]) => name);
export const OPTIONAL = CATALOGUE.filter(([, required]) => !required).map(([name]) => name);

/** Where each permission is probed (the fake's paths); the owner checks read current_user. */
export const PROBE_PATH: Readonly<Record<string, string>> = {
  logs_read_config: '/api/v1/logs/config/indexes',
  metrics_read: '/api/v1/metrics',
  dashboards_read: '/api/v1/dashboard',
  monitors_read: '/api/v1/monitor',
  slos_read: '/api/v1/slo',
  notebooks_read: '/api/v1/notebooks',
  audit_logs_read: '/api/v2/audit/events',
  logs_live_tail: '/api/v2/current_user',
  logs_read_data: '/api/v2/logs/events',
  logs_read_index_data: '/api/v2/current_user',
  usage_notifications_read: '/api/v2/current_user',
  usage_read: '/api/v1/usage/summary',
  logs_read_archives: '/api/v2/logs/config/archives',
  timeseries_query: '/api/v1/query',
};

/** Every path one full validation calls, once each. */
export const ALL_CALLED_PATHS = [
  '/api/v1/validate',
  '/api/v2/validate_keys',
  ...new Set(Object.values(PROBE_PATH)),
].sort();

type Status = 'Granted' | 'Missing' | 'Unknown';

/** The exact `validation` object expected, given the statuses that differ from Granted. */
export function expectedValidation(
  statuses: Record<string, Status> = {},
  keys: 'Working' | 'Invalid' = 'Working',
): Record<string, unknown> {
  const permissions = CATALOGUE.map(([name, required]) => ({
    name,
    required,
    status: keys === 'Invalid' ? 'Unknown' : (statuses[name] ?? 'Granted'),
  }));
  const required = permissions.filter((p) => p.required).map((p) => p.status);
  const requiredStatus =
    keys === 'Invalid'
      ? 'Unknown'
      : required.includes('Missing')
        ? 'Missing'
        : required.includes('Unknown')
          ? 'Unknown'
          : 'Granted';
  return {
    keys_status: keys,
    required_permissions_status: requiredStatus,
    can_save: keys === 'Working' && requiredStatus === 'Granted',
    permissions,
    checked_at: expect.stringMatching(ISO_MS),
  };
}

/** Datadog-looking keys: 32 and 40 hex digits. */
export function datadogKeys(seed: string): { api_key: string; application_key: string } {
  const hex = Buffer.from(seed.repeat(20)).toString('hex');
  return { api_key: hex.slice(0, 28) + 'a1b2', application_key: hex.slice(0, 36) + 'c3d4' };
}

/**
 * Provider settings for a test app: calls go to the fake, retries are fast, timeouts short. Suites
 * validate far more often than 10 times a minute in one organization: the per-organization limit
 * is raised here and tested with its default in test/integrations/integrations-limits.e2e-spec.ts.
 */
export function monitoringEnv(fakeUrl: string, extra: Environment = {}): Environment {
  return {
    MONITORING_API_BASE_URL: fakeUrl,
    MONITORING_REQUEST_TIMEOUT_MS: '1000',
    MONITORING_MAX_RETRIES: '2',
    MONITORING_MAX_RETRY_WAIT_MS: '50',
    MONITORING_VALIDATIONS_PER_MINUTE: '100000',
    ...extra,
  };
}

/** A fake Datadog on loopback and a test app whose provider it is (monitoringEnv plus `extra`). */
export async function startWithFakeDatadog(extra: Environment = {}): Promise<{ fake: FakeDatadog; t: TestApp }> {
  const fake = await FakeDatadog.start();
  return { fake, t: await createTestApp({ env: monitoringEnv(fake.url, extra) }) };
}

/** Before each test: the fake forgets what it saw, accepts only `keys`, and its 429s say "retry at once". */
export function resetFakeDatadog(fake: FakeDatadog, keys: { api_key: string; application_key: string }): void {
  fake.reset();
  fake.acceptKeys({ apiKeys: [keys.api_key], applicationKeys: [keys.application_key] });
  fake.rateLimitResetSeconds = 0;
}

export interface StoredIntegration {
  id: string;
  organization_id: string;
  created_by: string;
  name: string;
  site: string;
  api_key_last4: string;
  application_key_last4: string;
  api_key_encrypted: string;
  application_key_encrypted: string;
  validation: string;
  created_at: unknown;
  updated_at: unknown;
}

/** The rows as stored, read with SQL rather than through the service. */
export async function storedIntegrations(t: TestApp): Promise<StoredIntegration[]> {
  return t.get(DataSource).query(`SELECT * FROM notification_integrations ORDER BY id`);
}
