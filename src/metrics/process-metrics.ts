import { collectDefaultMetrics, Registry } from 'prom-client';

let shared: Registry | undefined;

/** Gauges named like counters, which promtool refuses; `nodejs_active_handles` etc. carry the same numbers. */
const MISNAMED_GAUGES = [
  'nodejs_active_handles_total',
  'nodejs_active_requests_total',
  'nodejs_active_resources_total',
];

/** Standard names, as Node.js dashboards expect; one registry per process. */
export function processMetrics(): Registry {
  if (shared === undefined) {
    shared = new Registry();
    collectDefaultMetrics({ register: shared });
    for (const name of MISNAMED_GAUGES) shared.removeSingleMetric(name);
  }
  return shared;
}
