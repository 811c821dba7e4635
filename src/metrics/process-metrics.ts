import { collectDefaultMetrics, Registry } from 'prom-client';

let shared: Registry | undefined;

/**
 * Node's default process metrics (CPU, memory, heap, event-loop delay, GC, handles), prefixed `gatehouse_`, in one
 * registry per process, made when the first metrics listener starts. They describe the process, not an app, and
 * prom-client starts an event-loop-delay monitor and a GC observer for them that it never stops: one registry per app
 * would add a pair for every app a test process starts. The admin CLI, which serves no metrics, never makes it.
 */
export function processMetrics(): Registry {
  if (shared === undefined) {
    shared = new Registry();
    collectDefaultMetrics({ register: shared, prefix: 'gatehouse_' });
  }
  return shared;
}
