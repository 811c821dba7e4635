import { collectDefaultMetrics, Registry } from 'prom-client';

let shared: Registry | undefined;

/**
 * prom-client's gauges named like counters: `promtool check metrics` refuses them ("non-counter metrics should not
 * have _total suffix"), and `nodejs_active_handles` etc. (by type) carry the same numbers: sum() them.
 */
const MISNAMED_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/**
 * Node's default process metrics (CPU, memory, heap, event-loop delay, GC, handles) under their standard names
 * (`process_cpu_seconds_total`, `nodejs_eventloop_lag_seconds`, ...: what Node.js dashboards and alerts expect), in one
 * registry per process, made when the first metrics listener starts.
 */
export function processMetrics(): Registry {
  if (shared === undefined) {
    shared = new Registry();
    collectDefaultMetrics({ register: shared });
    for (const name of MISNAMED_GAUGES) shared.removeSingleMetric(name);
  }
  return shared;
}
