import { resolve } from 'node:path';
import type { AddressList } from '../common/cidr';
import { ConfigurationError, Environment, Reader } from './reader';
import { DatabaseConfig, parseDatabase } from './sections/database';
import { parseMonitoringApiBaseUrl } from './sections/integrations';
import {
  NetworkSettings,
  parseIdentityProviderNetworks,
  parseIssuer,
  parseMetrics,
  parseNetwork,
  parsePublicBaseUrl,
} from './sections/network';
import { OAuthClientSettings, parseOAuthClients } from './sections/oauth-clients';
import { parseSecrets } from './sections/secrets';
import { parseWebhooks, WebhookSettings } from './sections/webhooks';

/**
 * Typed configuration, read once from the environment and validated before anything starts (docs/operations.md); every
 * variable is in .env.example.
 */
export { ConfigurationError };
export type { DatabaseConfig, Environment };

/** Every field's variable, default and meaning: .env.example and docs/operations.md#configuration. */
export interface AppConfiguration {
  production: boolean;
  environmentUnset: boolean;
  host: string;
  port: number;
  /** PORT was set, not defaulted: the admin CLI's warnings say which (cli/environment-warnings.ts). */
  portSet: boolean;
  dataDir: string;
  database: DatabaseConfig;
  bodyLimitBytes: number;
  trustProxy: NetworkSettings['trustProxy'];
  /**
   * Private networks where trusted issuers (identity providers) may be called: an on-premises provider
   * (IDENTITY_PROVIDER_NETWORKS; docs/federation.md#where-gatehouse-connects). Empty: public addresses only.
   */
  identityProviderNetworks: AddressList;
  logLevel: 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
  apiKeys: {
    environment: string;
    /** Secrets left undefined outside production are generated and kept (local-secrets.ts). */
    pepper: string | undefined;
    lastUsedFlushMs: number;
    /** How often usage-over-time counts are written (docs/adr/0058-usage-over-time.md). */
    usageFlushMs: number;
    maxActivePerUser: number;
  };
  jwt: {
    privateKeyPem: string | undefined;
    previousPublicKeyPems: string[];
    /** An absolute URL (RFC 8414, RFC 9068): metadata and tokens carry exactly this string as `iss`. */
    issuer: string;
    /** The default audience: tokens minted without a `resource` (docs/resource-servers.md). */
    audience: string;
  };
  /** Cache-Control max-age of an allowed forward-auth answer, 0-5 s (docs/resource-servers.md#forward-auth). */
  forwardAuthCacheSeconds: number;
  /** The revocation feed (docs/revocation-feed.md, docs/adr/0031-revocation-feed-in-production.md). */
  ssf: { pollWaitSeconds: number; eventRetentionDays: number; streamIdleSeconds: number; maxWaitingPolls: number };
  /** Signed webhooks (docs/webhooks.md). */
  webhooks: WebhookSettings;
  /** Dynamic client registration and its limits (docs/mcp.md#dynamic-client-registration). */
  oauthClients: OAuthClientSettings;
  integrations: {
    encryptionKey: string | undefined;
    encryptionKeyId: string;
    previousEncryptionKeys: Array<{ id: string; key: string }>;
    monitoringApiBaseUrl: string | undefined;
    monitoringTimeoutMs: number;
    monitoringMaxRetries: number;
    monitoringMaxRetryWaitMs: number;
    monitoringProbeConcurrency: number;
    validationDeadlineMs: number;
    validationsPerMinute: number;
    maxConcurrentValidations: number;
  };
  redisUrl: string | undefined;
  redisKeyPrefix: string;
  rateLimit: {
    tokenFailuresPerMinute: number;
    tokenFailureWindowSeconds: number;
    exposedReportsPerHour: number;
  };
  metrics: { enabled: boolean; host: string; port: number };
  exposedReportMinResponseMs: number;
  audit: {
    retentionDays: number;
  };
  console: {
    assetsDir: string;
    publicBaseUrl: string;
    publicBaseUrlSet: boolean;
    signInFailuresPerMinute: number;
  };
  shutdownTimeoutMs: number;
  shutdownDrainMs: number;
}

/** What a caller's context changes in the defaults: the admin CLI logs warnings and errors only unless LOG_LEVEL asks. */
export interface ConfigurationDefaults {
  logLevel?: AppConfiguration['logLevel'];
}

export function loadConfiguration(env: Environment, defaults: ConfigurationDefaults = {}): AppConfiguration {
  const r = new Reader(env);
  // Exactly one of three values: a typo such as `prod` must not run with development's defaults (operations.md).
  const production =
    r.oneOf('NODE_ENV', ['development', 'test', 'production'] as const, 'development') === 'production';
  const dataDir = resolve(r.string('DATA_DIR', './data')!);
  const secrets = parseSecrets(r, production);
  const monitoringApiBaseUrl = parseMonitoringApiBaseUrl(r, production);
  const network = parseNetwork(r, production);
  const { port } = network;
  const publicBaseUrl = parsePublicBaseUrl(r, port);
  const config: AppConfiguration = {
    production,
    environmentUnset: network.environmentUnset,
    host: network.host,
    port,
    portSet: r.string('PORT') !== undefined,
    dataDir,
    database: parseDatabase(r, dataDir),
    bodyLimitBytes: r.int('BODY_LIMIT_BYTES', 16 * 1024, 256, 10 * 1024 * 1024),
    trustProxy: network.trustProxy,
    identityProviderNetworks: parseIdentityProviderNetworks(r),
    logLevel: r.oneOf(
      'LOG_LEVEL',
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'] as const,
      defaults.logLevel ?? 'info',
    ),
    apiKeys: {
      environment: secrets.apiKeyEnvironment,
      pepper: secrets.pepper,
      lastUsedFlushMs: r.int('API_KEY_LAST_USED_FLUSH_MS', 1000, 10, 60000),
      usageFlushMs: r.int('USAGE_FLUSH_MS', 10_000, 10, 60000),
      // At most the list window (common/pagination.ts), so that every active key can be listed.
      maxActivePerUser: r.int('API_KEY_MAX_ACTIVE_PER_USER', 100, 1, 10000),
    },
    jwt: {
      privateKeyPem: secrets.privateKeyPem,
      previousPublicKeyPems: secrets.previousPublicKeyPems,
      issuer: parseIssuer(r, production, publicBaseUrl),
      audience: r.string('JWT_AUDIENCE', 'gatehouse')!,
    },
    integrations: {
      encryptionKey: secrets.encryptionKey,
      encryptionKeyId: secrets.encryptionKeyId,
      previousEncryptionKeys: secrets.previousEncryptionKeys,
      monitoringApiBaseUrl,
      monitoringTimeoutMs: r.int('MONITORING_REQUEST_TIMEOUT_MS', 5000, 100, 60000),
      monitoringMaxRetries: r.int('MONITORING_MAX_RETRIES', 2, 0, 5),
      monitoringMaxRetryWaitMs: r.int('MONITORING_MAX_RETRY_WAIT_MS', 5000, 0, 60000),
      monitoringProbeConcurrency: r.int('MONITORING_PROBE_CONCURRENCY', 4, 1, 14),
      validationDeadlineMs: r.int('MONITORING_VALIDATION_DEADLINE_MS', 15000, 100, 120000),
      validationsPerMinute: r.int('MONITORING_VALIDATIONS_PER_MINUTE', 10, 1, 100000),
      maxConcurrentValidations: r.int('MONITORING_MAX_CONCURRENT_VALIDATIONS', 8, 1, 1000),
    },
    forwardAuthCacheSeconds: r.int('FORWARD_AUTH_CACHE_SECONDS', 1, 0, 5),
    ssf: {
      pollWaitSeconds: r.int('SSF_POLL_WAIT_SECONDS', 20, 0, 60),
      eventRetentionDays: r.int('SSF_EVENT_RETENTION_DAYS', 7, 1, 365),
      streamIdleSeconds: r.int('SSF_STREAM_IDLE_SECONDS', 3600, 60, 7 * 24 * 3600),
      maxWaitingPolls: r.int('SSF_MAX_WAITING_POLLS', 16, 1, 10000),
    },
    webhooks: parseWebhooks(r),
    oauthClients: parseOAuthClients(r),
    redisUrl: network.redisUrl,
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
      publicBaseUrl,
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
