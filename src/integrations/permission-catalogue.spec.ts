import {
  OPTIONAL_PERMISSIONS,
  PERMISSION_CATALOGUE,
  PERMISSION_NAMES,
  REQUIRED_PERMISSIONS,
} from './permission-catalogue';

describe('permission catalogue', () => {
  it('has the fourteen checks of docs/integrations.md#the-fourteen-permission-checks, in order, each once', () => {
    expect(PERMISSION_NAMES).toEqual([
      'logs_read_config',
      'metrics_read',
      'dashboards_read',
      'monitors_read',
      'slos_read',
      'notebooks_read',
      'audit_logs_read',
      'logs_live_tail',
      'logs_read_data',
      'logs_read_index_data',
      'usage_notifications_read',
      'usage_read',
      'logs_read_archives',
      'timeseries_query',
    ]);
    expect(new Set(PERMISSION_NAMES).size).toBe(14);
  });

  it('requires exactly the six of docs/integrations.md#validation (metrics_read once, as required)', () => {
    expect(REQUIRED_PERMISSIONS).toEqual([
      'logs_read_config',
      'metrics_read',
      'dashboards_read',
      'monitors_read',
      'slos_read',
      'notebooks_read',
    ]);
    expect(OPTIONAL_PERMISSIONS).toHaveLength(8);
    expect(OPTIONAL_PERMISSIONS).not.toContain('metrics_read');
  });

  it("uses Datadog's names for the documented logs_read and datalogs_read_index_data", () => {
    expect(PERMISSION_NAMES).toContain('logs_read_data');
    expect(PERMISSION_NAMES).toContain('logs_read_index_data');
    expect(PERMISSION_NAMES).not.toContain('logs_read');
    expect(PERMISSION_NAMES).not.toContain('datalogs_read_index_data');
  });

  it('probes each permission the way the table says', () => {
    const now = new Date('2026-03-09T12:00:00.000Z');
    const s = now.getTime() / 1000;
    const probes = Object.fromEntries(
      PERMISSION_CATALOGUE.map(({ name, probe }) => [
        name,
        probe.kind === 'owner' ? 'owner' : { path: probe.path, query: probe.query(now) },
      ]),
    );
    expect(probes).toEqual({
      logs_read_config: { path: '/api/v1/logs/config/indexes', query: {} },
      metrics_read: { path: '/api/v1/metrics', query: { from: String(s - 3600) } },
      dashboards_read: { path: '/api/v1/dashboard', query: { count: '1' } },
      monitors_read: { path: '/api/v1/monitor', query: { page: '0', page_size: '1' } },
      slos_read: { path: '/api/v1/slo', query: { limit: '1' } },
      notebooks_read: { path: '/api/v1/notebooks', query: { count: '1', include_cells: 'false' } },
      audit_logs_read: { path: '/api/v2/audit/events', query: { 'page[limit]': '1' } },
      logs_live_tail: 'owner',
      logs_read_data: { path: '/api/v2/logs/events', query: { 'page[limit]': '1', 'filter[from]': 'now-15m' } },
      logs_read_index_data: 'owner',
      usage_notifications_read: 'owner',
      usage_read: { path: '/api/v1/usage/summary', query: { start_month: '2026-03' } },
      logs_read_archives: { path: '/api/v2/logs/config/archives', query: {} },
      timeseries_query: {
        path: '/api/v1/query',
        query: { from: String(s - 300), to: String(s), query: 'avg:system.cpu.idle{*}' },
      },
    });
  });

  it('takes the usage month in UTC', () => {
    const usage = PERMISSION_CATALOGUE.find((c) => c.name === 'usage_read')!.probe;
    if (usage.kind !== 'endpoint') throw new Error('usage_read is an endpoint probe');
    expect(usage.query(new Date('2026-12-31T23:30:00.000-05:00'))).toEqual({ start_month: '2027-01' });
  });
});
