import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { ExpiringKeysService } from '../api-keys/expiring/expiring-keys.service';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { UnitOfWork } from '../database/unit-of-work';
import { WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookDispatcher } from './webhook-dispatcher';
import { eventMask, outboxEvent } from './webhook-events';
import { WebhookOutbox } from './webhook-outbox';
import { WebhooksRepository } from './webhooks.repository';

const DAY_MS = 24 * 60 * 60 * 1000;
/**
 * How often the expiry notices are looked for and old events pruned (the first time a minute after start), while any
 * webhook exists.
 */
export const SCHEDULE_INTERVAL_MS = 10 * 60 * 1000;
const FIRST_RUN_MS = 60 * 1000;

/** The two notices of a key's expiry: each sent while the key's time left is within its window (docs/webhooks.md). */
const NOTICES = [
  { days: 7, after: DAY_MS, until: 7 * DAY_MS },
  { days: 1, after: 0, until: DAY_MS },
] as const;

/**
 * `api_key.expiring` 7 days and 1 day before a key's `expires_at`, each once: an event is written with a dedupe key
 * (the key and the notice), which the database keeps unique whichever instance writes it first. Also prunes events
 * older than WEBHOOK_RETENTION_DAYS with their deliveries (bodies and answers: the storage stays bounded), and forgets
 * the previous secrets whose rotation overlap has ended.
 */
@Injectable()
export class WebhookScheduler implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WebhookScheduler.name);
  private timer: NodeJS.Timeout | undefined;
  private readonly retentionMs: number;

  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly outbox: WebhookOutbox,
    private readonly expiringKeys: ExpiringKeysService,
    private readonly dispatcher: WebhookDispatcher,
    private readonly unitOfWork: UnitOfWork,
    private readonly adapterHost: HttpAdapterHost,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.retentionMs = config.webhooks.retentionDays * DAY_MS;
  }

  onApplicationBootstrap(): void {
    if (this.adapterHost.httpAdapter == null) return;
    this.timer = setTimeout(() => {
      void this.run();
      this.timer = setInterval(() => void this.run(), SCHEDULE_INTERVAL_MS);
      this.timer.unref();
    }, FIRST_RUN_MS);
    this.timer.unref();
  }

  onModuleDestroy(): void {
    clearTimeout(this.timer);
    clearInterval(this.timer);
  }

  /** Never rejects: the next run tries again. Without any webhook there is nothing to notify or prune. */
  async run(now = new Date()): Promise<void> {
    if (!this.dispatcher.knowsWebhooks) return;
    try {
      await this.sendExpiryNotices(now);
      const cutoff = new Date(now.getTime() - this.retentionMs);
      await this.unitOfWork.run((tx) => this.deliveries.deleteOlderThan(cutoff, tx));
      await this.unitOfWork.run((tx) => this.webhooks.clearEndedOverlaps(now, tx));
    } catch (error) {
      this.logger.warn({ err: error }, 'webhook schedule failed; the next run tries again');
    }
  }

  /** The notices due at `now`; the deliveries written (a notice sent before is not written again). */
  async sendExpiryNotices(now = new Date()): Promise<number> {
    const organizations = await this.webhooks.organizationsSubscribedTo(eventMask(['api_key.expiring']));
    let written = 0;
    for (const notice of NOTICES) {
      const after = new Date(now.getTime() + notice.after);
      const until = new Date(now.getTime() + notice.until);
      for await (const keys of this.expiringKeys.between(organizations, after, until)) {
        const events = keys.map((key) =>
          outboxEvent(
            'api_key.expiring',
            key.organizationId,
            now,
            {
              organization_id: key.organizationId,
              api_key_id: key.id,
              user_id: key.userId,
              expires_at: key.expiresAt.toISOString(),
              days_before: notice.days,
            },
            { dedupeKey: `api_key.expiring:${key.id}:${notice.days}` },
          ),
        );
        written += (await this.outbox.write(events, undefined)).length;
      }
    }
    return written;
  }
}
