import { randomUUID } from 'node:crypto';
import { createServer, IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

/**
 * A fake Datadog HTTP API on loopback, for the e2e tests and for local trials
 * (`npm run fake-datadog`). It answers the read endpoints the service probes the way Datadog
 * documents them: 403 `{"errors":["Forbidden"]}` for a bad key or a missing permission, 429 with
 * `X-RateLimit-*` headers, 5xx, slow answers, and it records every call (method, path, query,
 * headers) so tests can check that only reads were made and that the keys travelled as headers.
 *
 * It is deliberately independent of src/: it knows Datadog's endpoints and permissions itself, so
 * a mistake in the service's permission catalogue is not mirrored here.
 */

/** Which permission each read endpoint needs at Datadog. */
export const ENDPOINT_PERMISSIONS: Readonly<Record<string, string>> = {
  '/api/v1/logs/config/indexes': 'logs_read_config',
  '/api/v1/metrics': 'metrics_read',
  '/api/v1/dashboard': 'dashboards_read',
  '/api/v1/monitor': 'monitors_read',
  '/api/v1/slo': 'slos_read',
  '/api/v1/notebooks': 'notebooks_read',
  '/api/v2/audit/events': 'audit_logs_read',
  '/api/v2/logs/events': 'logs_read_data',
  '/api/v1/usage/summary': 'usage_read',
  '/api/v2/logs/config/archives': 'logs_read_archives',
  '/api/v1/query': 'timeseries_query',
};

/** Query parameters Datadog insists on (400 without them). */
const REQUIRED_QUERY: Readonly<Record<string, string[]>> = {
  '/api/v1/metrics': ['from'],
  '/api/v1/usage/summary': ['start_month'],
  '/api/v1/query': ['from', 'to', 'query'],
};

/** Every permission the fake knows of: all granted by default. */
export const ALL_PERMISSIONS: readonly string[] = [
  ...new Set([
    ...Object.values(ENDPOINT_PERMISSIONS),
    'logs_live_tail',
    'logs_read_index_data',
    'usage_notifications_read',
    'logs_write_exclusion_filters',
  ]),
];

export interface RecordedCall {
  method: string;
  path: string;
  query: Record<string, string>;
  headers: IncomingHttpHeaders;
}

/** A scripted answer for one path: `times` calls (default: all), then normal service. */
export interface Fault {
  status: number;
  times?: number;
  headers?: Record<string, string>;
  body?: unknown;
}

export interface FakeDatadogOptions {
  port?: number;
  host?: string;
}

const FORBIDDEN = { errors: ['Forbidden'] };

export class FakeDatadog {
  readonly calls: RecordedCall[] = [];
  /** Calls whose client hung up before they were answered (an aborted request). */
  readonly abandoned: RecordedCall[] = [];
  /** Calls received and neither answered nor abandoned yet. */
  open = 0;
  /** API keys accepted; null accepts any key. */
  apiKeys: Set<string> | null = null;
  /** Application keys accepted; null accepts any key. */
  applicationKeys: Set<string> | null = null;
  granted = new Set<string>(ALL_PERMISSIONS);
  /** X-RateLimit-Reset (seconds) sent with scripted 429s that set none of their own. */
  rateLimitResetSeconds = 1;
  private faults = new Map<string, Fault & { served: number }>();
  private delays = new Map<string, number>();
  private readonly timers = new Set<NodeJS.Timeout>();

  private constructor(
    private readonly server: Server,
    readonly url: string,
  ) {}

  static async start(options: FakeDatadogOptions = {}): Promise<FakeDatadog> {
    const server = createServer();
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(options.port ?? 0, options.host ?? '127.0.0.1', () => resolve());
    });
    const { address, port } = server.address() as AddressInfo;
    const host = address.includes(':') ? `[${address}]` : address;
    const fake = new FakeDatadog(server, `http://${host}:${port}`);
    server.on('request', (req, res) => fake.handle(req, res));
    return fake;
  }

  /** Back to the defaults: any keys, every permission, no faults or delays, no recorded calls. */
  reset(): void {
    this.calls.length = 0;
    this.abandoned.length = 0;
    this.apiKeys = null;
    this.applicationKeys = null;
    this.granted = new Set(ALL_PERMISSIONS);
    this.rateLimitResetSeconds = 1;
    this.faults.clear();
    this.delays.clear();
  }

  /** Only these keys are valid from now on. */
  acceptKeys(keys: { apiKeys?: string[]; applicationKeys?: string[] }): this {
    if (keys.apiKeys !== undefined) this.apiKeys = new Set(keys.apiKeys);
    if (keys.applicationKeys !== undefined) this.applicationKeys = new Set(keys.applicationKeys);
    return this;
  }

  revoke(...permissions: string[]): this {
    for (const permission of permissions) this.granted.delete(permission);
    return this;
  }

  grant(...permissions: string[]): this {
    for (const permission of permissions) this.granted.add(permission);
    return this;
  }

  /** Answer `path` with `fault` (for `times` calls, or for good). */
  fail(path: string, fault: Fault): this {
    this.faults.set(path, { ...fault, served: 0 });
    return this;
  }

  /** Answer `path` only after `ms` milliseconds. */
  delay(path: string, ms: number): this {
    this.delays.set(path, ms);
    return this;
  }

  callsTo(path: string): RecordedCall[] {
    return this.calls.filter((call) => call.path === path);
  }

  async close(): Promise<void> {
    for (const timer of this.timers) clearTimeout(timer);
    this.timers.clear();
    this.server.closeAllConnections();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }

  private handle(req: IncomingMessage, res: ServerResponse): void {
    const url = new URL(req.url ?? '/', 'http://fake');
    const call: RecordedCall = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: Object.fromEntries(url.searchParams),
      headers: req.headers,
    };
    this.calls.push(call);
    this.open += 1;
    let settled = false;
    const settle = (abandoned: boolean): void => {
      if (settled) return;
      settled = true;
      this.open -= 1;
      if (abandoned) this.abandoned.push(call);
    };
    res.once('finish', () => settle(false));
    res.once('close', () => settle(!res.writableFinished));
    req.resume();
    const answer = (): void => this.answer(call, res);
    const wait = this.delays.get(call.path);
    if (wait === undefined || wait <= 0) return answer();
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!res.destroyed) answer();
    }, wait);
    this.timers.add(timer);
  }

  private answer(call: RecordedCall, res: ServerResponse): void {
    const fault = this.faults.get(call.path);
    if (fault !== undefined && (fault.times === undefined || fault.served < fault.times)) {
      fault.served += 1;
      const headers = fault.status === 429 ? { ...this.rateLimitHeaders(), ...fault.headers } : (fault.headers ?? {});
      return send(res, fault.status, fault.body ?? defaultBody(fault.status), headers);
    }
    if (call.method !== 'GET') return send(res, 405, { errors: ['Method Not Allowed'] });
    const apiKey = header(call.headers, 'dd-api-key');
    const applicationKey = header(call.headers, 'dd-application-key');
    const apiKeyValid = apiKey !== undefined && (this.apiKeys === null || this.apiKeys.has(apiKey));
    const applicationKeyValid =
      applicationKey !== undefined && (this.applicationKeys === null || this.applicationKeys.has(applicationKey));

    // GET /api/v1/validate checks the API key only.
    if (call.path === '/api/v1/validate')
      return apiKeyValid ? send(res, 200, { valid: true }) : send(res, 403, FORBIDDEN);
    if (!apiKeyValid || !applicationKeyValid) return send(res, 403, FORBIDDEN);
    if (call.path === '/api/v2/validate_keys') return send(res, 200, { valid: true });
    if (call.path === '/api/v2/current_user') return send(res, 200, this.currentUser());

    const permission = ENDPOINT_PERMISSIONS[call.path];
    if (permission === undefined) return send(res, 404, { errors: ['Not Found'] });
    const missing = (REQUIRED_QUERY[call.path] ?? []).filter((name) => call.query[name] === undefined);
    if (missing.length > 0) return send(res, 400, { errors: [`Missing required parameter: ${missing.join(', ')}`] });
    if (!this.granted.has(permission)) return send(res, 403, FORBIDDEN);
    return send(res, 200, emptyList(call.path));
  }

  private rateLimitHeaders(): Record<string, string> {
    return {
      'X-RateLimit-Limit': '100',
      'X-RateLimit-Period': '60',
      'X-RateLimit-Remaining': '0',
      'X-RateLimit-Reset': String(this.rateLimitResetSeconds),
      'X-RateLimit-Name': 'fake',
    };
  }

  /** JSON:API user with one role whose permissions are the granted ones, as Datadog includes them. */
  private currentUser(): unknown {
    const permissions = [...this.granted].map((name) => ({
      type: 'permissions',
      id: randomUUID(),
      attributes: { name, display_name: name, restricted: false },
    }));
    const roleId = randomUUID();
    return {
      data: {
        type: 'users',
        id: randomUUID(),
        attributes: { email: 'owner@example.com', handle: 'owner@example.com', status: 'Active' },
        relationships: { roles: { data: [{ type: 'roles', id: roleId }] } },
      },
      included: [
        {
          type: 'roles',
          id: roleId,
          attributes: { name: 'Fake Role' },
          relationships: { permissions: { data: permissions.map(({ type, id }) => ({ type, id })) } },
        },
        ...permissions,
      ],
    };
  }
}

function header(headers: IncomingHttpHeaders, name: string): string | undefined {
  const value = headers[name];
  return typeof value === 'string' ? value : undefined;
}

function defaultBody(status: number): unknown {
  if (status === 429) return { errors: ['Rate limit exceeded'] };
  if (status === 403) return FORBIDDEN;
  if (status === 400) return { errors: ['Bad Request'] };
  if (status >= 500) return { errors: ['Internal Server Error'] };
  return {};
}

/** The shape of an empty answer of each list endpoint ("an empty result too" counts as Granted). */
function emptyList(path: string): unknown {
  switch (path) {
    case '/api/v1/logs/config/indexes':
      return { indexes: [] };
    case '/api/v1/metrics':
      return { metrics: [], from: '0' };
    case '/api/v1/dashboard':
      return { dashboards: [] };
    case '/api/v1/monitor':
      return [];
    case '/api/v1/query':
      return { status: 'ok', series: [] };
    case '/api/v1/usage/summary':
      return { usage: [] };
    default:
      return { data: [] };
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}
