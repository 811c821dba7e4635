import { Module } from '@nestjs/common';
import { AuditModule } from '../../audit/audit.module';
import { RateLimitStorageModule } from '../../common/rate-limit-storage.module';
import { FederationModule } from '../../federation/federation.module';
import { IdentityModule } from '../../identity/identity.module';
import { MetricsModule } from '../../metrics/metrics.module';
import { ConsoleSignInModule } from '../console-sign-in.module';
import { ConsoleSsoController } from './console-sso.controller';
import { ConsoleSsoService } from './console-sso.service';
import { APP_CONFIG } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import { SSO_FETCH, SsoClient, ssoFetch } from './sso-client';
import { SsoIssuerMetadata } from './sso-issuer-metadata';
import { SsoRequestsRepository } from './sso-requests.repository';
import { DEFAULT_SSO_SETTINGS, SSO_SETTINGS } from './sso-settings';
import { ConsoleSsoRequest } from './console-sso-request.entity';
import { EntitiesModule } from '../../database/entities.module';

/**
 * Console single sign-on (docs/console.md#single-sign-on): a person signs in through their organization's identity
 * provider (federation's people issuer) and lands in the console as with a one-time sign-in link.
 */
@Module({
  imports: [
    EntitiesModule.forFeature([ConsoleSsoRequest]),
    ConsoleSignInModule,
    FederationModule,
    IdentityModule,
    AuditModule,
    RateLimitStorageModule,
    MetricsModule,
  ],
  controllers: [ConsoleSsoController],
  providers: [
    ConsoleSsoService,
    SsoRequestsRepository,
    SsoClient,
    SsoIssuerMetadata,
    { provide: SSO_SETTINGS, useValue: DEFAULT_SSO_SETTINGS },
    // Loopback answers only outside production (tests, local trials), as for webhooks.
    {
      provide: SSO_FETCH,
      inject: [APP_CONFIG],
      useFactory: (config: AppConfiguration) => ssoFetch(!config.production, config.identityProviderNetworks),
    },
  ],
})
export class ConsoleSsoModule {}
