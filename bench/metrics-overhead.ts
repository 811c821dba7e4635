/**
 * What the metrics add to one request, measured on their own (docs/adr/0023-prometheus-metrics.md): the histogram
 * observation every request makes when its response is done, the counter increment of a token exchange, and the
 * clock the access log reads (performance.now() where it read Date.now()). A loop over a realistic mix of label
 * values (several routes and statuses, so the label map holds many series), best of several runs.
 *   npx tsc -p tsconfig.bench.json && node dist-bench/bench/metrics-overhead.js
 */
import type { Request, Response } from 'express';
import { Metrics } from '../src/metrics/metrics';

const ITERATIONS = Number(process.env.BENCH_ITERATIONS ?? 2_000_000);
const RUNS = Number(process.env.BENCH_RUNS ?? 7);

const ROUTES = ['/v1/token', '/v1/user-api-keys/:id', '/v1/user-api-keys', '/healthz', undefined];
const STATUSES = [200, 200, 200, 401, 404, 429];

const requests = ROUTES.flatMap((path) =>
  STATUSES.map((statusCode) => ({
    req: { method: path === '/v1/token' ? 'POST' : 'GET', baseUrl: '', route: path && { path } } as unknown as Request,
    res: { statusCode, writableFinished: true } as unknown as Response,
  })),
);

/** ns per iteration of `body`, the best of RUNS runs. */
function measure(name: string, body: (i: number) => void): number {
  let best = Infinity;
  for (let run = 0; run < RUNS; run += 1) {
    const started = process.hrtime.bigint();
    for (let i = 0; i < ITERATIONS; i += 1) body(i);
    best = Math.min(best, Number(process.hrtime.bigint() - started) / ITERATIONS);
  }
  console.log(`${name.padEnd(52)} ${best.toFixed(1).padStart(7)} ns`);
  return best;
}

const metrics = new Metrics();
let sink = 0;
const empty = measure('empty loop', (i) => {
  sink += i;
});
const observe = measure('observeRequest (histogram, 3 labels)', (i) => {
  const { req, res } = requests[i % requests.length];
  metrics.observeRequest(req, res, (i % 50) / 10);
});
const count = measure('tokenExchange (counter, 1 label)', (i) => {
  metrics.tokenExchange(i % 4 === 0 ? 'invalid_credentials' : 'success');
});
const dateNow = measure('2 x Date.now()', () => {
  sink += Date.now() - Date.now();
});
const perfNow = measure('2 x performance.now()', () => {
  sink += performance.now() - performance.now();
});
console.log(
  `per token exchange: ~${(observe + count - 2 * empty + perfNow - dateNow).toFixed(0)} ns added ` +
    `(observe + one increment + the clock change); other requests ~${(observe - empty + perfNow - dateNow).toFixed(0)} ns`,
);
if (sink === 0.5) console.log(sink);
