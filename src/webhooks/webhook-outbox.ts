import { Injectable, Logger } from '@nestjs/common';
import type { AuditEvent } from '../audit/audit-event.entity';
import type { AuditObserver } from '../audit/observer';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { Transaction, UnitOfWork } from '../database/unit-of-work';
import { Metrics } from '../metrics/metrics';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { eventMask, eventsOfAuditEntry, OutboxEvent, TEST_EVENT } from './webhook-events';
import { WebhookWakeup } from './webhook-wakeup';
import { WebhooksRepository } from './webhooks.repository';

/**
 * The webhooks' outbox: every audit entry that stands for a webhook event (a key created, revoked or exposed, a member
 * removed) is written with a delivery per subscribed endpoint in the transaction of the change, whichever path made
 * it (owner, admin, rotation, exposed report, CLI), so no such change commits without its deliveries
 * (docs/adr/0037-signed-webhooks.md). The expiry notices and test deliveries are written the same way. A disabled
 * endpoint gets none, and an endpoint keeps at most WEBHOOK_MAX_PENDING_PER_ENDPOINT pending deliveries: past it the
 * oldest are dropped (docs/webhooks.md#limits).
 */
@Injectable()
export class WebhookOutbox implements AuditObserver {
  private readonly logger = new Logger(WebhookOutbox.name);
  private readonly maxPending: number;

  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly wakeup: WebhookWakeup,
    private readonly unitOfWork: UnitOfWork,
    private readonly metrics: Metrics,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.maxPending = config.webhooks.maxPendingPerEndpoint;
  }

  async recorded(entries: readonly AuditEvent[], tx: Transaction | undefined): Promise<void> {
    const events = entries.flatMap(eventsOfAuditEntry);
    if (events.length > 0) await this.write(events, tx);
  }

  /** The deliveries written (none when no endpoint receives the events); delivered once `tx` commits. */
  async write(events: readonly OutboxEvent[], tx: Transaction | undefined): Promise<string[]> {
    if (tx === undefined) return this.unitOfWork.run((own) => this.write(events, own));
    const organizations = [...new Set(events.map((event) => event.organizationId))];
    const subscribers = await this.webhooks.subscribersOf(organizations, tx);
    if (subscribers.length === 0) return [];
    const targets = new Map<OutboxEvent, string[]>();
    for (const event of events) {
      const bit = event.type === TEST_EVENT ? 0 : eventMask([event.type]);
      const ids = subscribers
        .filter((webhook) => webhook.organizationId === event.organizationId)
        .filter((webhook) =>
          event.webhookId === undefined ? (webhook.events & bit) !== 0 : webhook.id === event.webhookId,
        )
        .map((webhook) => webhook.id);
      if (ids.length > 0) targets.set(event, ids);
    }
    if (targets.size === 0) return [];
    const { written, dropped } = await this.deliveries.enqueue(targets, this.maxPending, tx);
    if (written.length > 0) this.unitOfWork.afterCommit(tx, () => this.wakeup.wake());
    if (dropped.size > 0) {
      this.unitOfWork.afterCommit(tx, () => {
        for (const [webhookId, count] of dropped) {
          this.metrics.webhookDeliveriesDropped(count);
          this.logger.warn({ webhookId, dropped: count }, 'webhook outbox full: the oldest pending deliveries dropped');
        }
      });
    }
    return written;
  }
}
