import type { Request, Response } from 'express';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { routeTemplate } from '../common/request-route';

/** Every place the service answers 429 (docs/operations.md#metrics). */
export type RateLimiter =
  /** POST /v1/token: failures per client network (docs/operations.md#abuse-limits-on-post-v1token). */
  | 'token_failures'
  /** Validations one organization may start per minute (docs/integrations.md#limits). */
  | 'validations_per_organization'
  /** Validations running at once on this instance (docs/integrations.md#limits). */
  | 'validations_concurrent'
  /** POST /v1/api-keys/exposed: reports per client network per hour (docs/api.md#post-v1api-keysexposed). */
  | 'exposed_reports'
  /** POST /v1/console/sessions: failed sign-ins per client network per minute (docs/console.md#signing-in). */
  | 'console_sign_in_failures'
  /** GET /v1/console/sso: single sign-ons started per client network per minute (docs/console.md#single-sign-on). */
  | 'console_sso_starts'
  /** An API key's own rate limit, at the exchange and forward auth (docs/api.md#allowlists-and-rate-limits). */
  | 'key_requests'
  /** POST /v1/organization/webhooks/{id}/test: test deliveries per organization per minute (docs/webhooks.md#limits). */
  | 'webhook_tests'
  /** POST /oauth/register: dynamic registrations per client network per hour (docs/mcp.md#dynamic-client-registration). */
  | 'oauth_registrations';

const RATE_LIMITERS: readonly RateLimiter[] = [
  'token_failures',
  'validations_per_organization',
  'validations_concurrent',
  'exposed_reports',
  'console_sign_in_failures',
  'console_sso_starts',
  'key_requests',
  'webhook_tests',
  'oauth_registrations',
];

/** Seconds: most answers take ms; a DB outage 503s in 1-2 s; a credentials validation may take up to 15 s. */
const REQUEST_DURATION_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 20];

/** What the pool gauges read: pg's Pool (TypeORM's PostgreSQL driver keeps one). */
export interface ConnectionPool {
  readonly totalCount: number;
  readonly idleCount: number;
  readonly waitingCount: number;
  readonly options: { max?: number };
}

/** What the HTTP gauges read: the server's open connections and the requests it is answering. */
export interface HttpLoad {
  readonly openConnections: number;
  readonly requestsInFlight: number;
}

/** A registry per app, so several apps in one process (tests) count separately (docs/operations.md#metrics). */
export class Metrics {
  readonly registry = new Registry();

  private readonly requestDuration = new Histogram({
    name: 'gatehouse_http_request_duration_seconds',
    help: 'Time to answer an HTTP request of the public port, by method, route template and status code',
    labelNames: ['method', 'route', 'status_code'] as const,
    buckets: REQUEST_DURATION_BUCKETS,
    registers: [this.registry],
  });

  private readonly exchanges = new Counter({
    name: 'gatehouse_token_exchanges_total',
    help: 'POST /v1/token by outcome: success, each refusal reason, rate_limited, mint_failed, unavailable, error',
    labelNames: ['outcome'] as const,
    registers: [this.registry],
  });

  private readonly rateLimitRefusals = new Counter({
    name: 'gatehouse_rate_limit_refusals_total',
    help: 'Requests answered 429, by the limit that refused them',
    labelNames: ['limiter'] as const,
    registers: [this.registry],
  });

  private readonly providerCalls = new Counter({
    name: 'gatehouse_provider_calls_total',
    help: 'Calls to the monitoring provider (retries included in one call), by check and outcome',
    labelNames: ['check', 'outcome'] as const,
    registers: [this.registry],
  });

  private readonly webhookDrops = new Counter({
    name: 'gatehouse_webhook_deliveries_dropped_total',
    help: 'Pending webhook deliveries dropped because their endpoint had too many pending (the oldest go first)',
    registers: [this.registry],
  });

  private readonly webhookDisables = new Counter({
    name: 'gatehouse_webhook_endpoints_disabled_total',
    help: 'Webhook endpoints disabled after too many failed attempts in a row',
    registers: [this.registry],
  });

  /** No `pool` on SQLite (one connection), so no pool gauges there. */
  constructor(pool?: ConnectionPool) {
    for (const limiter of RATE_LIMITERS) this.rateLimitRefusals.inc({ limiter }, 0);
    if (pool !== undefined) this.watchPool(pool);
  }

  /** The access log's request observer (common/request-logger.ts), once per finished response. */
  readonly observeRequest = (req: Request, res: Response, elapsedMs: number): void => {
    this.requestDuration.observe(
      {
        method: req.method,
        route: routeTemplate(req),
        status_code: res.writableFinished ? res.statusCode : 'aborted',
      },
      elapsedMs / 1000,
    );
  };

  /** Outcomes: see auth/exchange-outcome.ts. */
  tokenExchange(outcome: string): void {
    this.exchanges.inc({ outcome });
  }

  rateLimited(limiter: RateLimiter): void {
    this.rateLimitRefusals.inc({ limiter });
  }

  webhookDeliveriesDropped(count: number): void {
    this.webhookDrops.inc(count);
  }

  webhookEndpointDisabled(): void {
    this.webhookDisables.inc();
  }

  providerCall(check: string, outcome: string): void {
    this.providerCalls.inc({ check, outcome });
  }

  /** The listening server's (main.ts): read at each scrape, as the pool gauges are. */
  watchHttp(load: HttpLoad): void {
    new Gauge({
      name: 'gatehouse_http_connections_open',
      help: 'Connections to the public port open now, idle keep-alive ones included',
      registers: [this.registry],
      collect() {
        this.set(load.openConnections);
      },
    });
    new Gauge({
      name: 'gatehouse_http_requests_in_flight',
      help: 'Requests of the public port being answered now (arrived, response not finished)',
      registers: [this.registry],
      collect() {
        this.set(load.requestsInFlight);
      },
    });
  }

  /** Read at each scrape (collect callback): no timer, nothing on the request path. */
  private watchPool(pool: ConnectionPool): void {
    new Gauge({
      name: 'gatehouse_db_pool_connections_in_use',
      help: 'PostgreSQL connections checked out of the pool (serving a query or a transaction)',
      registers: [this.registry],
      collect() {
        this.set(pool.totalCount - pool.idleCount);
      },
    });
    new Gauge({
      name: 'gatehouse_db_pool_waiting_requests',
      help: 'Requests for a PostgreSQL connection waiting because every pooled connection is in use',
      registers: [this.registry],
      collect() {
        this.set(pool.waitingCount);
      },
    });
    new Gauge({
      name: 'gatehouse_db_pool_max_connections',
      help: 'Size of the PostgreSQL connection pool (DATABASE_POOL_SIZE)',
      registers: [this.registry],
      collect() {
        this.set(pool.options.max ?? 10);
      },
    });
  }
}
