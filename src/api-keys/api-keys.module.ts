import { Global, Module } from '@nestjs/common';
import { AuditModule } from '../audit/audit.module';
import { AUDIT_TARGET_LABELS } from '../audit/target-labels';
import { IdentityModule } from '../identity/identity.module';
import { LARGE_BODY_ROUTE } from '../common/json-body';
import { RateLimitStorageModule } from '../common/rate-limit-storage.module';
import { MetricsModule } from '../metrics/metrics.module';
import { ApiKeyLabels } from './api-key-labels';
import { ApiKeyUpdatesService } from './api-key-updates.service';
import { ApiKeysController } from './api-keys.controller';
import { ApiKeysRepository } from './api-keys.repository';
import { ExpiringKeysRepository } from './expiring/expiring-keys.repository';
import { ExpiringKeysService } from './expiring/expiring-keys.service';
import { ExposedKeysRepository } from './exposed/exposed-keys.repository';
import { ApiKeysService } from './api-keys.service';
import { ExposedKeysController } from './exposed/exposed-keys.controller';
import { ExposedKeysService } from './exposed/exposed-keys.service';
import { ExposedReportLimitGuard } from './exposed/exposed-report-limit.guard';
import { API_KEY_ROUTES } from './api-key-routes';
import { CredentialsModule } from '../credentials/credentials.module';
import { ApiKey } from './api-key.entity';
import { EntitiesModule } from '../database/entities.module';

@Module({
  imports: [
    EntitiesModule.forFeature([ApiKey]),
    AuditModule,
    IdentityModule,
    RateLimitStorageModule,
    MetricsModule,
    CredentialsModule,
  ],
  controllers: [ApiKeysController, API_KEY_ROUTES.OrganizationController, ExposedKeysController],
  providers: [
    ApiKeysRepository,
    ExposedKeysRepository,
    ApiKeysService,
    ApiKeyUpdatesService,
    ExposedKeysService,
    ExposedReportLimitGuard,
    // Its larger body, read only once the report limit's slot is taken (common/http-setup.ts).
    { provide: LARGE_BODY_ROUTE, useExisting: ExposedReportLimitGuard },
    ApiKeyLabels,
    ExpiringKeysRepository,
    ExpiringKeysService,
  ],
  // ApiKeyLabels: for ApiKeysPortsModule only. ExpiringKeysService: webhooks' expiry notices.
  exports: [ApiKeysService, ApiKeyLabels, ExpiringKeysService],
})
export class ApiKeysModule {}

/**
 * The port api-keys provides to audit: the audit log shows key labels beside key ids. Global, with that one token
 * exported, so that audit injects it without importing api-keys (docs/architecture.md#ports).
 */
@Global()
@Module({
  imports: [ApiKeysModule],
  providers: [{ provide: AUDIT_TARGET_LABELS, useExisting: ApiKeyLabels }],
  exports: [AUDIT_TARGET_LABELS],
})
export class ApiKeysPortsModule {}
