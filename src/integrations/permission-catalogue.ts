/** docs/integrations.md#the-fourteen-permission-checks, in reporting order. */
export type PermissionProbe =
  /** A read-only GET whose answer (2xx / 403) tells whether the keys hold the permission. */
  | { kind: 'endpoint'; path: string; query: (now: Date) => Record<string, string> }
  /** Read from the permissions of the key owner's roles (GET /api/v2/current_user). */
  | { kind: 'owner' };

export interface PermissionCheck {
  name: string;
  required: boolean;
  probe: PermissionProbe;
}

const seconds = (now: Date): number => Math.floor(now.getTime() / 1000);

const endpoint = (path: string, query: (now: Date) => Record<string, string> = () => ({})): PermissionProbe => ({
  kind: 'endpoint',
  path,
  query,
});

const OWNER: PermissionProbe = { kind: 'owner' };

export const PERMISSION_CATALOGUE: readonly PermissionCheck[] = [
  { name: 'logs_read_config', required: true, probe: endpoint('/api/v1/logs/config/indexes') },
  {
    name: 'metrics_read',
    required: true,
    probe: endpoint('/api/v1/metrics', (now) => ({ from: String(seconds(now) - 3600) })),
  },
  { name: 'dashboards_read', required: true, probe: endpoint('/api/v1/dashboard', () => ({ count: '1' })) },
  {
    name: 'monitors_read',
    required: true,
    probe: endpoint('/api/v1/monitor', () => ({ page: '0', page_size: '1' })),
  },
  { name: 'slos_read', required: true, probe: endpoint('/api/v1/slo', () => ({ limit: '1' })) },
  {
    name: 'notebooks_read',
    required: true,
    probe: endpoint('/api/v1/notebooks', () => ({ count: '1', include_cells: 'false' })),
  },
  { name: 'audit_logs_read', required: false, probe: endpoint('/api/v2/audit/events', () => ({ 'page[limit]': '1' })) },
  { name: 'logs_live_tail', required: false, probe: OWNER },
  {
    name: 'logs_read_data',
    required: false,
    probe: endpoint('/api/v2/logs/events', () => ({ 'page[limit]': '1', 'filter[from]': 'now-15m' })),
  },
  { name: 'logs_read_index_data', required: false, probe: OWNER },
  { name: 'usage_notifications_read', required: false, probe: OWNER },
  {
    name: 'usage_read',
    required: false,
    probe: endpoint('/api/v1/usage/summary', (now) => ({ start_month: now.toISOString().slice(0, 7) })),
  },
  { name: 'logs_read_archives', required: false, probe: endpoint('/api/v2/logs/config/archives') },
  {
    name: 'timeseries_query',
    required: false,
    probe: endpoint('/api/v1/query', (now) => ({
      from: String(seconds(now) - 300),
      to: String(seconds(now)),
      query: 'avg:system.cpu.idle{*}',
    })),
  },
];

export const PERMISSION_NAMES: readonly string[] = PERMISSION_CATALOGUE.map((check) => check.name);
export const REQUIRED_PERMISSIONS: readonly string[] = PERMISSION_CATALOGUE.filter((c) => c.required).map(
  (c) => c.name,
);
export const OPTIONAL_PERMISSIONS: readonly string[] = PERMISSION_CATALOGUE.filter((c) => !c.required).map(
  (c) => c.name,
);
