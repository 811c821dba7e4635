import { createPrivateKey, createPublicKey, KeyObject } from 'node:crypto';
import { isIP } from 'node:net';
import { isAbsolute, resolve } from 'node:path';

/**
 * Typed configuration, read once from the environment and validated before anything starts
 * (docs/operations.md). A bad value stops the service with a message naming the variable.
 * Every variable is listed, with its default, in .env.example.
 */
export type Environment = Record<string, string | undefined>;

export type DatabaseConfig =
  | { type: 'sqlite'; path: string }
  | {
      type: 'postgres';
      url: string;
      schema: string | undefined;
      poolSize: number;
      connectTimeoutMs: number;
      statementTimeoutMs: number;
    };

export interface AppConfiguration {
  production: boolean;
  /** NODE_ENV was not set: a local development run, on loopback only. */
  environmentUnset: boolean;
  host: string;
  port: number;
  dataDir: string;
  database: DatabaseConfig;
  bodyLimitBytes: number;
  /** Express `trust proxy`: false, true, a number of hops, or addresses / subnets / loopback etc. */
  trustProxy: boolean | number | string;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  apiKeys: {
    environment: string;
    /** Raw pepper for the secret HMAC; undefined outside production means "generate and keep one". */
    pepper: string | undefined;
    lastUsedFlushMs: number;
    /** ACTIVE keys one user may hold in one organization (docs/api.md#post-v1user-api-keys). */
    maxActivePerUser: number;
  };
  jwt: {
    /** PEM of the ES256 (P-256) signing key; undefined outside production means "generate and keep one". */
    privateKeyPem: string | undefined;
    /** PEMs of further public keys that still verify (key rotation). */
    previousPublicKeyPems: string[];
    issuer: string;
    audience: string;
  };
  integrations: {
    /** 32-byte AES-256-GCM key, base64; undefined outside production means "generate and keep one". */
    encryptionKey: string | undefined;
    encryptionKeyId: string;
    /** Older keys that still decrypt: `id:base64key` pairs. */
    previousEncryptionKeys: Array<{ id: string; key: string }>;
    monitoringApiBaseUrl: string | undefined;
    monitoringTimeoutMs: number;
    /** Retries of one provider call after a 429, a 5xx or a network error (docs/integrations.md#provider-client). */
    monitoringMaxRetries: number;
    /** Longest wait before a retry; a provider asking for longer is treated as unavailable. */
    monitoringMaxRetryWaitMs: number;
    /** Permission probes in flight at once for one validation. */
    monitoringProbeConcurrency: number;
    /** Longest time one validation may take, retries included; then 503 and its calls are aborted. */
    validationDeadlineMs: number;
    /** Validations one organization may start per minute, across every instance with REDIS_URL. */
    validationsPerMinute: number;
    /** Validations running at once on this instance. */
    maxConcurrentValidations: number;
  };
  redisUrl: string | undefined;
  /** Prefix of every Redis key this service writes (several deployments, or test runs, on one Redis). */
  redisKeyPrefix: string;
  rateLimit: {
    /** Failed POST /v1/token attempts allowed per client address and per key id in one window. */
    tokenFailuresPerMinute: number;
    /** Length of that window (60 s by default, hence the name of the limit). */
    tokenFailureWindowSeconds: number;
    /** POST /v1/api-keys/exposed requests allowed per client address per hour (docs/api.md#post-v1api-keysexposed). */
    exposedReportsPerHour: number;
  };
  /** The Prometheus listener (docs/operations.md#metrics), never the public port; `enabled` false: METRICS_PORT=off. */
  metrics: { enabled: boolean; host: string; port: number };
  /**
   * The least time between a report of exposed keys reaching its handler and its answer, so that
   * the answer's time does not show whether a key was revoked (docs/adr/0020-exposed-key-reports-answer-at-a-floor.md).
   */
  exposedReportMinResponseMs: number;
  audit: {
    /** Days an audit event is kept; older ones are pruned by the service (docs/operations.md#retention). */
    retentionDays: number;
  };
  console: {
    /** Where the web console's built files are (docs/operations.md#web-console); served at /console when it holds index.html. */
    assetsDir: string;
    /** The service's address as a browser reaches it: sign-in links start with it. */
    publicBaseUrl: string;
    /** PUBLIC_BASE_URL was set (else publicBaseUrl is http://localhost:PORT, a guess the CLI warns about). */
    publicBaseUrlSet: boolean;
    /** Failed sign-ins (POST /v1/console/sessions) allowed per client address (IPv6 per /64) per minute. */
    signInFailuresPerMinute: number;
  };
  shutdownTimeoutMs: number;
  /** After SIGTERM: how long the instance keeps listening, answering new work 503, before it stops listening. */
  shutdownDrainMs: number;
}

export class ConfigurationError extends Error {
  constructor(readonly problems: string[]) {
    super(`invalid configuration:\n  - ${problems.join('\n  - ')}`);
    this.name = 'ConfigurationError';
  }
}

const PLACEHOLDER = /^(change-?me|changeme|secret|placeholder|xxx+|todo)$/i;

class Reader {
  readonly problems: string[] = [];
  constructor(private readonly env: Environment) {}

  string(name: string, fallback?: string): string | undefined {
    const raw = this.env[name];
    if (raw === undefined || raw.trim() === '') return fallback;
    return raw.trim();
  }

  int(name: string, fallback: number, min: number, max: number): number {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    if (!/^\d+$/.test(raw) || Number(raw) < min || Number(raw) > max) {
      this.problems.push(`${name} must be an integer from ${min} to ${max} (got "${raw}")`);
      return fallback;
    }
    return Number(raw);
  }

  oneOf<T extends string>(name: string, values: readonly T[], fallback: T): T {
    const raw = this.string(name);
    if (raw === undefined) return fallback;
    if (!(values as readonly string[]).includes(raw)) {
      this.problems.push(`${name} must be one of ${values.join(', ')} (got "${raw}")`);
      return fallback;
    }
    return raw as T;
  }

  problem(message: string): void {
    this.problems.push(message);
  }
}

/** PEM values may arrive with literal "\n" sequences when set on one line. */
function pem(value: string | undefined): string | undefined {
  return value?.replace(/\\n/g, '\n');
}

function parseDatabase(r: Reader, dataDir: string): DatabaseConfig {
  const url = r.string('DATABASE_URL', `sqlite:${resolve(dataDir, 'gatehouse.sqlite')}`)!;
  if (url.startsWith('sqlite:')) {
    const file = url.slice('sqlite:'.length).replace(/^\/\/(?=\/)/, '');
    if (file === '') r.problem('DATABASE_URL sqlite: needs a file path, e.g. sqlite:./data/gatehouse.sqlite');
    const path = file === ':memory:' || isAbsolute(file) ? file : resolve(file);
    return { type: 'sqlite', path };
  }
  if (url.startsWith('postgres://') || url.startsWith('postgresql://')) {
    try {
      new URL(url);
    } catch {
      r.problem('DATABASE_URL is not a valid postgres:// URL');
    }
    const schema = r.string('DATABASE_SCHEMA');
    if (schema !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(schema)) {
      r.problem('DATABASE_SCHEMA must be a lower-case SQL identifier');
    }
    return {
      type: 'postgres',
      url,
      schema,
      poolSize: r.int('DATABASE_POOL_SIZE', 10, 1, 200),
      // 1 s each: a request fails with 503 within 2 s when PostgreSQL is down or silent (a silent
      // connection is given the statement timeout + 500 ms; data-source-options.ts).
      connectTimeoutMs: r.int('DATABASE_CONNECT_TIMEOUT_MS', 1000, 100, 60000),
      statementTimeoutMs: r.int('DATABASE_STATEMENT_TIMEOUT_MS', 1000, 100, 600000),
    };
  }
  r.problem('DATABASE_URL must start with sqlite: or postgres://');
  return { type: 'sqlite', path: ':memory:' };
}

function parsePreviousEncryptionKeys(r: Reader): Array<{ id: string; key: string }> {
  const raw = r.string('INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS');
  if (raw === undefined) return [];
  return raw.split(',').flatMap((pair) => {
    const at = pair.indexOf(':');
    if (at <= 0) {
      r.problem('INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS must be a comma-separated list of id:base64key');
      return [];
    }
    return [{ id: pair.slice(0, at).trim(), key: pair.slice(at + 1).trim() }];
  });
}

/**
 * A previous key under the current key's id would be shadowed by the current key (values sealed
 * with it would no longer open), and two previous keys under one id by each other.
 */
function checkPreviousKeyIds(r: Reader, currentId: string, previous: ReadonlyArray<{ id: string }>): void {
  const seen = new Set<string>();
  for (const { id } of previous) {
    if (id === currentId) {
      r.problem(
        `INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: "${id}" is the id of the current key (INTEGRATIONS_ENCRYPTION_KEY_ID); give the current key a new id`,
      );
    } else if (seen.has(id)) {
      r.problem(`INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: the id "${id}" is listed twice`);
    }
    seen.add(id);
  }
}

/** 127.0.0.0/8 and ::1 as the URL parser writes them (it normalises 127.1, 0x7f.0.0.1, [0:0::1] etc.). */
function isLoopbackHost(hostname: string): boolean {
  if (hostname === 'localhost' || hostname === '[::1]') return true;
  return isIP(hostname) === 4 && hostname.startsWith('127.');
}

/**
 * Tests and local trials send every provider call (with every tenant's provider keys) to this
 * origin, so it must be this machine: a loopback address in every environment, and never in
 * production (docs/integrations.md#sites). Checked on the URL as fetch will parse it, so that
 * `http://127.0.0.1@elsewhere` or `http://127.0.0.1.example.com` name the host they really name.
 */
function parseMonitoringApiBaseUrl(r: Reader, production: boolean): string | undefined {
  const raw = r.string('MONITORING_API_BASE_URL');
  if (raw === undefined) return undefined;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (url === undefined || !/^https?:\/\/[^/?#]+\/?$/.test(raw) || !['http:', 'https:'].includes(url.protocol)) {
    r.problem('MONITORING_API_BASE_URL must be an http(s) origin such as http://127.0.0.1:4010');
    return undefined;
  }
  if (url.username !== '' || url.password !== '' || !isLoopbackHost(url.hostname)) {
    r.problem('MONITORING_API_BASE_URL must be on a loopback address (127.0.0.0/8, [::1] or localhost)');
  }
  if (production) {
    r.problem('MONITORING_API_BASE_URL is for tests and local runs; it is refused when NODE_ENV=production');
  }
  return url.origin;
}

/** Whether the key parses and is an EC P-256 key, the only kind ES256 signs with. */
function isP256(parse: () => KeyObject): boolean {
  try {
    const key = parse();
    return key.asymmetricKeyType === 'ec' && key.asymmetricKeyDetails?.namedCurve === 'prime256v1';
  } catch {
    return false;
  }
}

const TRUST_PROXY_NAMES = new Set(['loopback', 'linklocal', 'uniquelocal']);

/**
 * Express takes a number of hops only as a number: the string "1" would be read as the address
 * 0.0.0.1, and "true" would make the server fail while starting. Checked here instead.
 */
function parseTrustProxy(r: Reader, raw: string | undefined): boolean | number | string {
  if (raw === undefined || raw === 'false') return false;
  if (raw === 'true') return true;
  if (/^\d{1,2}$/.test(raw)) return Number(raw);
  const valid = raw.split(',').every((entry) => {
    const [address, prefix, ...rest] = entry.trim().split('/');
    if (rest.length > 0) return false;
    if (TRUST_PROXY_NAMES.has(address)) return prefix === undefined;
    const version = isIP(address);
    return (
      version !== 0 &&
      (prefix === undefined || (/^\d{1,3}$/.test(prefix) && Number(prefix) <= (version === 4 ? 32 : 128)))
    );
  });
  if (!valid) {
    r.problem(
      'TRUST_PROXY must be true, false, a number of hops, or a comma-separated list of addresses, subnets, loopback, linklocal or uniquelocal',
    );
    return false;
  }
  return raw;
}

/**
 * METRICS_PORT (a port, 0 for any free one, or `off`) and METRICS_HOST (an IP address or localhost; loopback by
 * default, so that metrics are private unless an operator opens them), docs/operations.md#metrics.
 */
function parseMetrics(r: Reader, publicPort: number): AppConfiguration['metrics'] {
  const host = r.string('METRICS_HOST', '127.0.0.1')!;
  if (host !== 'localhost' && isIP(host) === 0) {
    r.problem('METRICS_HOST must be an IP address (e.g. 127.0.0.1, 0.0.0.0 or ::) or localhost');
  }
  const raw = r.string('METRICS_PORT');
  if (raw === 'off') return { enabled: false, host, port: 0 };
  const port = raw === undefined ? 9464 : Number(raw);
  if (raw !== undefined && (!/^\d{1,5}$/.test(raw) || port > 65535)) {
    r.problem(`METRICS_PORT must be a port from 0 to 65535, or off (got "${raw}")`);
  } else if (port !== 0 && port === publicPort) {
    r.problem('METRICS_PORT must differ from PORT: metrics are never served on the public port');
  }
  return { enabled: true, host, port };
}

/**
 * PUBLIC_BASE_URL: an http(s) origin, optionally with a path prefix (a reverse proxy serving the
 * service under one), without a query or fragment; stored without the trailing slash.
 */
function parsePublicBaseUrl(r: Reader, port: number): string {
  const raw = r.string('PUBLIC_BASE_URL');
  if (raw === undefined) return `http://localhost:${port}`;
  let url: URL | undefined;
  try {
    url = new URL(raw);
  } catch {
    url = undefined;
  }
  if (
    url === undefined ||
    !['http:', 'https:'].includes(url.protocol) ||
    url.username !== '' ||
    url.password !== '' ||
    url.search !== '' ||
    url.hash !== '' ||
    raw.includes('?') ||
    raw.includes('#')
  ) {
    r.problem(
      'PUBLIC_BASE_URL must be an http(s) URL without credentials, query or fragment, e.g. https://gatehouse.example.com',
    );
    return `http://localhost:${port}`;
  }
  return `${url.origin}${url.pathname}`.replace(/\/+$/, '');
}

export function loadConfiguration(env: Environment): AppConfiguration {
  const r = new Reader(env);
  // Exactly one of three values: a typo such as `prod` must not quietly run with the local defaults
  // (generated secrets, MONITORING_API_BASE_URL allowed) meant for development (docs/operations.md).
  const production =
    r.oneOf('NODE_ENV', ['development', 'test', 'production'] as const, 'development') === 'production';
  const dataDir = resolve(r.string('DATA_DIR', './data')!);

  const apiKeyEnv = r.string('API_KEY_ENV', 'dev')!;
  if (!/^[a-z0-9]{1,16}$/.test(apiKeyEnv)) r.problem('API_KEY_ENV must be 1-16 lower-case letters or digits');

  const pepper = r.string('API_KEY_PEPPER');
  if (pepper !== undefined && (pepper.length < 32 || PLACEHOLDER.test(pepper))) {
    r.problem('API_KEY_PEPPER must be at least 32 characters of random data (e.g. `openssl rand -base64 32`)');
  }
  const privateKeyPem = pem(r.string('JWT_PRIVATE_KEY'));
  if (privateKeyPem !== undefined && !isP256(() => createPrivateKey(privateKeyPem))) {
    r.problem('JWT_PRIVATE_KEY must be a PEM-encoded EC P-256 private key (ES256)');
  }
  let previousPublicKeyPems: string[] = [];
  const previousRaw = r.string('JWT_PREVIOUS_PUBLIC_KEYS');
  if (previousRaw !== undefined) {
    try {
      const parsed: unknown = JSON.parse(previousRaw);
      if (!Array.isArray(parsed) || !parsed.every((p) => typeof p === 'string')) throw new Error('not a list');
      previousPublicKeyPems = parsed.map((p: string) => pem(p)!);
      previousPublicKeyPems.forEach((key, index) => {
        if (!isP256(() => createPublicKey(key))) {
          r.problem(`JWT_PREVIOUS_PUBLIC_KEYS: entry ${index} is not a PEM-encoded EC P-256 public key`);
        }
      });
    } catch {
      r.problem('JWT_PREVIOUS_PUBLIC_KEYS must be a JSON array of PEM strings');
    }
  }
  const encryptionKey = r.string('INTEGRATIONS_ENCRYPTION_KEY');
  if (encryptionKey !== undefined && Buffer.from(encryptionKey, 'base64').length !== 32) {
    r.problem('INTEGRATIONS_ENCRYPTION_KEY must be 32 bytes, base64-encoded (e.g. `openssl rand -base64 32`)');
  }
  const previousEncryptionKeys = parsePreviousEncryptionKeys(r);
  for (const { id, key } of previousEncryptionKeys) {
    if (Buffer.from(key, 'base64').length !== 32) {
      r.problem(`INTEGRATIONS_PREVIOUS_ENCRYPTION_KEYS: key "${id}" must be 32 bytes, base64-encoded`);
    }
  }
  const encryptionKeyId = r.string('INTEGRATIONS_ENCRYPTION_KEY_ID', 'k1')!;
  if (!/^[A-Za-z0-9_-]{1,32}$/.test(encryptionKeyId)) {
    r.problem('INTEGRATIONS_ENCRYPTION_KEY_ID must be 1-32 letters, digits, "-" or "_"');
  }
  checkPreviousKeyIds(r, encryptionKeyId, previousEncryptionKeys);

  if (production) {
    if (pepper === undefined) r.problem('API_KEY_PEPPER is required when NODE_ENV=production');
    if (privateKeyPem === undefined) r.problem('JWT_PRIVATE_KEY is required when NODE_ENV=production');
    if (encryptionKey === undefined) {
      r.problem('INTEGRATIONS_ENCRYPTION_KEY is required when NODE_ENV=production');
    }
  }

  const monitoringApiBaseUrl = parseMonitoringApiBaseUrl(r, production);

  const redisUrl = r.string('REDIS_URL');
  if (redisUrl !== undefined && !/^rediss?:\/\/[^\s]+$/.test(redisUrl)) {
    r.problem('REDIS_URL must be a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379');
  }

  const trustProxy = parseTrustProxy(r, r.string('TRUST_PROXY'));
  // `true` takes the left-most X-Forwarded-For entry, which any client can write (docs/operations.md#client-address).
  if (trustProxy === true && production) {
    r.problem(
      'TRUST_PROXY=true is refused when NODE_ENV=production: it trusts any X-Forwarded-For a client sends; set the number of proxy hops in front of the service (e.g. 1) or their addresses or subnets',
    );
  }
  const port = r.int('PORT', 3000, 0, 65535);
  // NODE_ENV unset is a local run: loopback only, so that a deployment that forgot it never serves the
  // development defaults (generated secrets) to the network (docs/operations.md#node_env).
  const environmentUnset = (env.NODE_ENV ?? '') === '';
  const host = r.string('HOST', environmentUnset ? '127.0.0.1' : '0.0.0.0')!;
  if (environmentUnset && !isLoopbackHost(host.includes(':') ? `[${host}]` : host)) {
    r.problem(
      `HOST=${host} listens beyond this machine, but NODE_ENV is not set: set NODE_ENV=production for a deployment (or NODE_ENV=development to run a development server on the network)`,
    );
  }
  const config: AppConfiguration = {
    production,
    environmentUnset,
    host,
    port,
    dataDir,
    database: parseDatabase(r, dataDir),
    bodyLimitBytes: r.int('BODY_LIMIT_BYTES', 16 * 1024, 256, 10 * 1024 * 1024),
    trustProxy,
    logLevel: r.oneOf('LOG_LEVEL', ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const, 'info'),
    apiKeys: {
      environment: apiKeyEnv,
      pepper,
      lastUsedFlushMs: r.int('API_KEY_LAST_USED_FLUSH_MS', 1000, 10, 60000),
      // At most the list window (common/pagination.ts), so that every active key can be listed.
      maxActivePerUser: r.int('API_KEY_MAX_ACTIVE_PER_USER', 100, 1, 10000),
    },
    jwt: {
      privateKeyPem,
      previousPublicKeyPems,
      issuer: r.string('JWT_ISSUER', 'gatehouse')!,
      audience: r.string('JWT_AUDIENCE', 'gatehouse')!,
    },
    integrations: {
      encryptionKey,
      encryptionKeyId,
      previousEncryptionKeys,
      monitoringApiBaseUrl,
      monitoringTimeoutMs: r.int('MONITORING_REQUEST_TIMEOUT_MS', 5000, 100, 60000),
      monitoringMaxRetries: r.int('MONITORING_MAX_RETRIES', 2, 0, 5),
      monitoringMaxRetryWaitMs: r.int('MONITORING_MAX_RETRY_WAIT_MS', 5000, 0, 60000),
      monitoringProbeConcurrency: r.int('MONITORING_PROBE_CONCURRENCY', 4, 1, 14),
      // Limits on validations (docs/integrations.md#limits).
      validationDeadlineMs: r.int('MONITORING_VALIDATION_DEADLINE_MS', 15000, 100, 120000),
      validationsPerMinute: r.int('MONITORING_VALIDATIONS_PER_MINUTE', 10, 1, 100000),
      maxConcurrentValidations: r.int('MONITORING_MAX_CONCURRENT_VALIDATIONS', 8, 1, 1000),
    },
    redisUrl,
    redisKeyPrefix: r.string('REDIS_KEY_PREFIX', 'gatehouse:')!,
    rateLimit: {
      tokenFailuresPerMinute: r.int('TOKEN_FAILURE_LIMIT_PER_MINUTE', 20, 1, 100000),
      tokenFailureWindowSeconds: r.int('TOKEN_FAILURE_WINDOW_SECONDS', 60, 1, 86400),
      exposedReportsPerHour: r.int('EXPOSED_REPORTS_PER_HOUR', 60, 1, 100000),
    },
    metrics: parseMetrics(r, port),
    exposedReportMinResponseMs: r.int('EXPOSED_REPORT_MIN_RESPONSE_MS', 500, 0, 10000),
    audit: {
      // Up to a hundred years: there is no "keep for ever", and a mistyped 0 must not empty the trail.
      retentionDays: r.int('AUDIT_RETENTION_DAYS', 400, 1, 36500),
    },
    console: {
      // Beside the compiled server: dist/console next to dist/config (npm run build writes both).
      assetsDir: resolve(r.string('CONSOLE_ASSETS_DIR', resolve(__dirname, '..', 'console'))!),
      publicBaseUrl: parsePublicBaseUrl(r, port),
      publicBaseUrlSet: r.string('PUBLIC_BASE_URL') !== undefined,
      signInFailuresPerMinute: r.int('CONSOLE_SIGN_IN_FAILURE_LIMIT_PER_MINUTE', 10, 1, 100000),
    },
    shutdownTimeoutMs: r.int('SHUTDOWN_TIMEOUT_MS', 8000, 0, 60000),
    shutdownDrainMs: r.int('SHUTDOWN_DRAIN_MS', 0, 0, 60000),
  };
  // SHUTDOWN_TIMEOUT_MS bounds the whole shutdown: a drain as long would always end in a timeout.
  if (config.shutdownDrainMs > 0 && config.shutdownDrainMs >= config.shutdownTimeoutMs) {
    r.problem('SHUTDOWN_DRAIN_MS must be less than SHUTDOWN_TIMEOUT_MS, which bounds the whole shutdown');
  }
  if (r.problems.length > 0) throw new ConfigurationError(r.problems);
  return config;
}
