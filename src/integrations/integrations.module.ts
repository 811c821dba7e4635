import { Logger, Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { RateLimitStorageModule } from '../common/rate-limit-storage.module';
import { APP_CONFIG, SECRETS } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import type { Secrets } from '../config/local-secrets';
import { Metrics } from '../metrics/metrics';
import { MetricsModule } from '../metrics/metrics.module';
import { CredentialCipher } from './credential-cipher';
import { CredentialsValidator } from './credentials-validator';
import { DatadogAdapter } from './datadog.adapter';
import { IntegrationsController } from './integrations.controller';
import { IntegrationsRepository } from './integrations.repository';
import { IntegrationsService } from './integrations.service';
import { MONITORING_PROVIDER } from './monitoring-provider.port';
import { ProviderHttpClient } from './provider-http-client';
import { ValidationLimits } from './validation-limits';
import { NotificationIntegration } from './integration.entity';
import { EntitiesModule } from '../database/entities.module';

const logger = new Logger('MonitoringProvider');

@Module({
  imports: [EntitiesModule.forFeature([NotificationIntegration]), AuditModule, RateLimitStorageModule, MetricsModule],
  controllers: [IntegrationsController],
  providers: [
    IntegrationsRepository,
    IntegrationsService,
    CredentialsValidator,
    ValidationLimits,
    {
      provide: CredentialCipher,
      inject: [APP_CONFIG, SECRETS],
      useFactory: (config: AppConfiguration, secrets: Secrets) =>
        new CredentialCipher(
          { id: config.integrations.encryptionKeyId, key: secrets.integrationsEncryptionKey },
          config.integrations.previousEncryptionKeys,
        ),
    },
    {
      provide: MONITORING_PROVIDER,
      inject: [APP_CONFIG, Metrics],
      useFactory: (config: AppConfiguration, metrics: Metrics) =>
        new DatadogAdapter(
          new ProviderHttpClient({
            timeoutMs: config.integrations.monitoringTimeoutMs,
            maxRetries: config.integrations.monitoringMaxRetries,
            maxRetryWaitMs: config.integrations.monitoringMaxRetryWaitMs,
          }),
          {
            baseUrlOverride: config.integrations.monitoringApiBaseUrl,
            concurrency: config.integrations.monitoringProbeConcurrency,
            log: (message, context) => logger.warn(context, message),
            onCall: (check, outcome) => metrics.providerCall(check, outcome),
          },
        ),
    },
  ],
  exports: [IntegrationsService],
})
export class IntegrationsModule {}
