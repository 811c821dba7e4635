import { DynamicModule, Module } from '@nestjs/common';
import { APP_FILTER } from '@nestjs/core';
import type { DestinationStream } from 'pino';
import { ApiKeysModule, ApiKeysPortsModule } from './api-keys/api-keys.module';
import { AuditModule } from './audit/audit.module';
import { AuthModule } from './auth/auth.module';
import { AllExceptionsFilter } from './common/exception.filter';
import { ConsoleSignInModule } from './console-sign-in/console-sign-in.module';
import { ConsoleSsoModule } from './console-sign-in/sso/console-sso.module';
import { LoggingModule, LogLevel } from './common/logging.module';
import { WorkersModule } from './common/workers.module';
import { AppConfigModule } from './config/config.module';
import type { Environment } from './config/configuration';
import { DatabaseModule } from './database/database.module';
import { FederationModule } from './federation/federation.module';
import { GrantsModule } from './grants/grants.module';
import { HealthModule } from './health/health.module';
import { IdentityModule } from './identity/identity.module';
import { IntegrationsModule } from './integrations/integrations.module';
import { MembersModule } from './members/members.module';
import { MetricsModule } from './metrics/metrics.module';
import { OrganizationSettingsModule } from './organization-settings/organization-settings.module';
import { OAuthModule } from './oauth/oauth.module';
import { SsfModule, SsfPortsModule } from './ssf/ssf.module';
import { WebhooksModule, WebhooksPortsModule } from './webhooks/webhooks.module';
import {
  WorkloadIdentitiesModule,
  WorkloadIdentitiesPortsModule,
} from './workload-identities/workload-identities.module';

export interface AppModuleOptions {
  /** Exactly this environment instead of process.env and .env (tests, several instances in one process). */
  env?: Environment;
  /** Where the JSON log lines go instead of stdout (the CLI: stderr; tests: a buffer). */
  logDestination?: DestinationStream;
  /** The compiled worker files' folder, when not beside this code's (tests: a compiled copy of src/). */
  workerDirectory?: string;
  /** The log level when LOG_LEVEL is unset (the admin CLI: warn). */
  defaultLogLevel?: LogLevel;
}

@Module({})
export class AppModule {
  static forRoot(options: AppModuleOptions = {}): DynamicModule {
    return {
      module: AppModule,
      imports: [
        AppConfigModule.forRoot(options.env, { logLevel: options.defaultLogLevel }),
        LoggingModule.forRoot({ destination: options.logDestination }),
        WorkersModule.forRoot(options.workerDirectory),
        DatabaseModule.forRoot(),
        MetricsModule,
        // Express tries routes in the order they are registered, one after another: the probes and the endpoints every
        // client and resource server calls (the exchanges, introspection, forward auth) come first, ahead of the
        // management API (docs/performance.md#route-order).
        HealthModule,
        AuthModule,
        OAuthModule,
        IdentityModule,
        ApiKeysModule,
        GrantsModule,
        MembersModule,
        IntegrationsModule,
        OrganizationSettingsModule,
        AuditModule,
        ConsoleSignInModule,
        ConsoleSsoModule,
        SsfModule,
        WebhooksModule,
        FederationModule,
        WorkloadIdentitiesModule,
        // The ports higher modules provide to lower ones (docs/architecture.md#ports).
        ApiKeysPortsModule,
        SsfPortsModule,
        WebhooksPortsModule,
        WorkloadIdentitiesPortsModule,
      ],
      providers: [{ provide: APP_FILTER, useClass: AllExceptionsFilter }],
    };
  }
}
