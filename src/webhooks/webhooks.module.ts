import { Global, Module } from '@nestjs/common';
import { ApiKeysModule } from '../api-keys/api-keys.module';
import { AuditModule } from '../audit/audit.module';
import { AUDIT_WEBHOOK_OBSERVER } from '../audit/observer';
import { RateLimitStorageModule } from '../common/rate-limit-storage.module';
import { MetricsModule } from '../metrics/metrics.module';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookDispatcher } from './webhook-dispatcher';
import { WebhookOutbox } from './webhook-outbox';
import { WebhookScheduler } from './webhook-scheduler';
import { WebhookSecrets } from './webhook-secrets';
import { WebhookWakeup } from './webhook-wakeup';
import { WebhooksController } from './webhooks.controller';
import { WebhooksRepository } from './webhooks.repository';
import { WebhooksService } from './webhooks.service';
import { Webhook } from './webhook.entity';
import { WebhookEvent } from './webhook.entity';
import { WebhookDelivery } from './webhook.entity';
import { EntitiesModule } from '../database/entities.module';

/**
 * Signed webhooks (docs/webhooks.md): the outbox that audit entries feed, the dispatcher that delivers it, the expiry
 * notices, and the endpoints' API.
 */
@Module({
  // api-keys: the keys whose expiry is near (ExpiringKeysService). Rate-limit storage: the test deliveries' limit.
  imports: [
    EntitiesModule.forFeature([Webhook, WebhookEvent, WebhookDelivery]),
    AuditModule,
    ApiKeysModule,
    RateLimitStorageModule,
    MetricsModule,
  ],
  controllers: [WebhooksController],
  providers: [
    WebhooksRepository,
    WebhookDeliveriesRepository,
    WebhookSecrets,
    WebhookWakeup,
    WebhookDispatcher,
    WebhookOutbox,
    WebhookScheduler,
    WebhooksService,
  ],
  // For WebhooksPortsModule only.
  exports: [WebhookOutbox],
})
export class WebhooksModule {}

/**
 * The port webhooks provides to audit: AuditService tells the outbox of every entry inside the entry's transaction.
 * Global, with that one token exported, so that audit injects it without importing webhooks
 * (docs/architecture.md#ports).
 */
@Global()
@Module({
  imports: [WebhooksModule],
  providers: [{ provide: AUDIT_WEBHOOK_OBSERVER, useExisting: WebhookOutbox }],
  exports: [AUDIT_WEBHOOK_OBSERVER],
})
export class WebhooksPortsModule {}
