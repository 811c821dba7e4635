import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import { Logger } from '@nestjs/common';
import { DataSourceOptions } from 'typeorm';
import { DatabaseConfig } from '../config/configuration';
import { CoreSchema1763700000000 } from './migrations/1763700000000-core-schema';
import { AuditEvents1763900000000 } from './migrations/1763900000000-audit-events';
import { NotificationIntegrations1764000000000 } from './migrations/1764000000000-notification-integrations';
import { ApiKeysOwnerStatus1764100000000 } from './migrations/1764100000000-api-keys-owner-status';
import { MemberAccessView1764200000000 } from './migrations/1764200000000-member-access-view';
import { ApiKeysOwnerActive1764300000000 } from './migrations/1764300000000-api-keys-owner-active';
import { OrganizationKeyPolicy1764400000000 } from './migrations/1764400000000-organization-key-policy';
import { AuditPreviousKey1764450000000 } from './migrations/1764450000000-audit-previous-key';
import { ApiKeyScopesAndExpiry1764500000000 } from './migrations/1764500000000-api-key-scopes-and-expiry';
import { ApiKeysOwnerUsable1764510000000 } from './migrations/1764510000000-api-keys-owner-usable';
import { AuditEventPages1764600000000 } from './migrations/1764600000000-audit-event-pages';
import { ConsoleSignInLinks1764700000000 } from './migrations/1764700000000-console-sign-in-links';
import { ApiKeyUsage1764800000000 } from './migrations/1764800000000-api-key-usage';
import { ApiKeysOrganizationNewest1764810000000 } from './migrations/1764810000000-api-keys-organization-newest';
import { MembershipSessionsValidAfter1764900000000 } from './migrations/1764900000000-membership-sessions-valid-after';
import { ApiKeysReplacedBy1764910000000 } from './migrations/1764910000000-api-keys-replaced-by';
import { ResourceServers1765000000000 } from './migrations/1765000000000-resource-servers';
import { SsfEvents1765100000000 } from './migrations/1765100000000-ssf-events';
import { SsfStreams1765200000000 } from './migrations/1765200000000-ssf-streams';
import { AuditPreviousKeyExpiry1765120000000 } from './migrations/1765120000000-audit-previous-key-expiry';
import { TrustedIssuers1765310000000 } from './migrations/1765310000000-trusted-issuers';
import { Webhooks1765400000000 } from './migrations/1765400000000-webhooks';
import { WebhookEndpointHealth1765830000000 } from './migrations/1765830000000-webhook-endpoint-health';
import { ConsoleSingleSignOn1765530000000 } from './migrations/1765530000000-console-single-sign-on';
import { WorkloadIdentities1765520000000 } from './migrations/1765520000000-workload-identities';
import { ApiKeyPolicies1765600000000 } from './migrations/1765600000000-api-key-policies';
import { OnePeopleIssuerPerOrganization1765710000000 } from './migrations/1765710000000-one-people-issuer-per-organization';
import { AuditReasonSubject1765730000000 } from './migrations/1765730000000-audit-reason-subject';
import { WorkloadIdentitiesNamed1765800000000 } from './migrations/1765800000000-workload-identities-named';
import { IdTokenUses1765810000000 } from './migrations/1765810000000-id-token-uses';
import { MemberRemovals1765820000000 } from './migrations/1765820000000-member-removals';
import { SignInLinkBinding1765850000000 } from './migrations/1765850000000-sign-in-link-binding';
import { TrustedIssuerAllowedOrigins1765851000000 } from './migrations/1765851000000-trusted-issuer-allowed-origins';
import { ResourceServerScopes1765852000000 } from './migrations/1765852000000-resource-server-scopes';
import { OAuthGrants1765860000000 } from './migrations/1765860000000-oauth-grants';
import { OAuthClients1765890000000 } from './migrations/1765890000000-oauth-clients';
import { CredentialPermissions1765870000000 } from './migrations/1765870000000-credential-permissions';
import { MemberInvitations1765900000000 } from './migrations/1765900000000-member-invitations';
import { CredentialUsage1765910000000 } from './migrations/1765910000000-credential-usage';
import { WebhookDeliveryDetails1765920000000 } from './migrations/1765920000000-webhook-delivery-details';
import { RefreshChains1765940000000 } from './migrations/1765940000000-refresh-chains';
import { TimeoutSafePgClient } from './pg-client';
import { loadBetterSqlite3 } from './sqlite-driver';

export const MIGRATIONS = [
  CoreSchema1763700000000,
  AuditEvents1763900000000,
  NotificationIntegrations1764000000000,
  ApiKeysOwnerStatus1764100000000,
  MemberAccessView1764200000000,
  ApiKeysOwnerActive1764300000000,
  OrganizationKeyPolicy1764400000000,
  AuditPreviousKey1764450000000,
  ApiKeyScopesAndExpiry1764500000000,
  ApiKeysOwnerUsable1764510000000,
  AuditEventPages1764600000000,
  ConsoleSignInLinks1764700000000,
  ApiKeyUsage1764800000000,
  ApiKeysOrganizationNewest1764810000000,
  MembershipSessionsValidAfter1764900000000,
  ApiKeysReplacedBy1764910000000,
  ResourceServers1765000000000,
  SsfEvents1765100000000,
  AuditPreviousKeyExpiry1765120000000,
  SsfStreams1765200000000,
  TrustedIssuers1765310000000,
  Webhooks1765400000000,
  WorkloadIdentities1765520000000,
  ConsoleSingleSignOn1765530000000,
  ApiKeyPolicies1765600000000,
  OnePeopleIssuerPerOrganization1765710000000,
  AuditReasonSubject1765730000000,
  WorkloadIdentitiesNamed1765800000000,
  IdTokenUses1765810000000,
  MemberRemovals1765820000000,
  WebhookEndpointHealth1765830000000,
  SignInLinkBinding1765850000000,
  TrustedIssuerAllowedOrigins1765851000000,
  ResourceServerScopes1765852000000,
  OAuthGrants1765860000000,
  CredentialPermissions1765870000000,
  OAuthClients1765890000000,
  MemberInvitations1765900000000,
  CredentialUsage1765910000000,
  WebhookDeliveryDetails1765920000000,
  RefreshChains1765940000000,
];

/**
 * Shared by the app, the admin CLI and ormconfig.ts. `synchronize` is never on: the schema is the migrations. The
 * entities are the feature modules' own (EntitiesModule, loaded by the app; data-source.ts finds them by file name).
 */
export function dataSourceOptions(
  database: DatabaseConfig,
  extra: { entities?: DataSourceOptions['entities']; migrations?: DataSourceOptions['migrations'] } = {},
): DataSourceOptions {
  const common = {
    entities: extra.entities ?? [],
    migrations: extra.migrations ?? MIGRATIONS,
    migrationsRun: true,
    migrationsTransactionMode: 'each' as const,
    synchronize: false,
    logging: false,
    // A where-clause value that is undefined or null must never silently match every row.
    invalidWhereValuesBehavior: { null: 'throw' as const, undefined: 'throw' as const },
  };
  if (database.type === 'sqlite') {
    if (database.path !== ':memory:') mkdirSync(dirname(database.path), { recursive: true });
    return {
      ...common,
      type: 'better-sqlite3',
      driver: loadBetterSqlite3(),
      database: database.path,
      enableWAL: true,
      timeout: 5000,
      prepareDatabase: (db: { pragma(source: string): unknown }) => {
        db.pragma('foreign_keys = ON');
        db.pragma('synchronous = NORMAL');
        // A key lookup in a large table then costs no read() system calls (docs/adr/0001-sqlite-default-and-postgresql.md).
        db.pragma('mmap_size = 1073741824');
        db.pragma('cache_size = -65536');
      },
    };
  }
  const searchPath = database.schema === undefined ? '' : ` -c search_path=${database.schema}`;
  return {
    ...common,
    type: 'postgres',
    url: database.url,
    schema: database.schema,
    connectTimeoutMS: database.connectTimeoutMs,
    // Without a handler, an idle pooled connection dying would crash the process; the pool already dropped it.
    poolErrorHandler: (error: unknown) =>
      new Logger('Database').warn({ err: error }, 'idle database connection lost; the pool reconnects on demand'),
    extra: {
      max: database.poolSize,
      connectionTimeoutMillis: database.connectTimeoutMs,
      // A stalled database fails the request (503) instead of hanging it; query_timeout catches a silent
      // database or network, and TimeoutSafePgClient drops that connection (docs/api.md).
      statement_timeout: database.statementTimeoutMs,
      query_timeout: database.statementTimeoutMs + 500,
      idle_in_transaction_session_timeout: database.statementTimeoutMs * 5,
      keepAlive: true,
      Client: TimeoutSafePgClient,
      options: searchPath.trim() === '' ? undefined : searchPath.trim(),
    },
  };
}
