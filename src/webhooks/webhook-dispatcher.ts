import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { UnitOfWork } from '../database/unit-of-work';
import { ClaimedDelivery, WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { nextAttemptAt } from './webhook-retries';
import { WebhookSecrets } from './webhook-secrets';
import { AttemptOutcome, WebhookSender } from './webhook-sender';
import { signWebhook } from './webhook-signer';
import { WebhooksRepository } from './webhooks.repository';

/** Deliveries one claim takes, attempted at once. */
const CLAIM_BATCH = 8;
/** Without any webhook, how often an instance looks whether one was made at another instance. */
const IDLE_CHECK_MS = 5 * 60 * 1000;

/**
 * Delivers the outbox (docs/webhooks.md#retries, docs/adr/0037-signed-webhooks.md): at once for a change committed at
 * this instance, every WEBHOOK_POLL_INTERVAL_MS for retries and the other instances' changes while webhooks exist.
 * Each due delivery is claimed by one instance for a lease longer than an attempt can take; the outcome is recorded
 * under that claim, so a crash mid-attempt only means the delivery is attempted again once the lease lapses.
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WebhookDispatcher.name);
  private readonly sender: WebhookSender;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private again = false;
  /** Some webhook exists (as far as this instance knows): poll at the short interval. */
  private active = false;
  private checkedAt = 0;
  private started = false;

  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly secrets: WebhookSecrets,
    private readonly unitOfWork: UnitOfWork,
    @InjectConfig() config: AppConfiguration,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    // Outside production a receiver may listen on loopback (tests, local trials); never elsewhere.
    this.sender = new WebhookSender(config.webhooks.timeoutMs, !config.production);
    this.pollMs = config.webhooks.pollIntervalMs;
    this.leaseMs = 2 * config.webhooks.timeoutMs + 10_000;
  }

  /** In the server only: the admin CLI's changes are delivered by a server. */
  async onApplicationBootstrap(): Promise<void> {
    if (this.adapterHost.httpAdapter == null) return;
    this.started = true;
    await this.check();
    this.schedule(this.active ? 0 : undefined);
  }

  async onModuleDestroy(): Promise<void> {
    this.started = false;
    clearTimeout(this.timer);
    // An attempt cut short keeps its claim: another attempt follows once the lease lapses.
    this.stopping.abort();
    await this.running;
  }

  /** Whether any webhook exists, as far as this instance knows (asked at start, then every 5 minutes). */
  get knowsWebhooks(): boolean {
    return this.active;
  }

  /** A change with deliveries committed at this instance, or a webhook made here: deliver now. */
  wake(): void {
    if (!this.started) return;
    this.active = true;
    void this.run();
  }

  /** Claims and attempts the due deliveries until none is due; a call during a run makes it go round once more. */
  run(): Promise<void> {
    if (this.running !== undefined) {
      this.again = true;
      return this.running;
    }
    const run = this.rounds().finally(() => {
      this.running = undefined;
      this.schedule();
    });
    this.running = run;
    return run;
  }

  private async rounds(): Promise<void> {
    do {
      this.again = false;
      try {
        while (!this.stopping.signal.aborted && (await this.round()));
      } catch (error) {
        this.logger.warn({ err: error }, 'webhook delivery round failed; the next poll tries again');
      }
    } while (this.again && !this.stopping.signal.aborted);
  }

  /** One claim and its attempts; false when nothing was due (or another instance took it all). */
  private async round(): Promise<boolean> {
    const now = new Date();
    if (!(await this.deliveries.anyDue(now))) return false;
    const claim = randomUUID();
    const leaseUntil = new Date(now.getTime() + this.leaseMs);
    const claimed = await this.unitOfWork.run((tx) =>
      this.deliveries.claimDue(now, leaseUntil, claim, CLAIM_BATCH, tx),
    );
    await Promise.all(claimed.map((delivery) => this.attempt(delivery, claim)));
    return claimed.length > 0;
  }

  private async attempt(delivery: ClaimedDelivery, claim: string): Promise<void> {
    const at = new Date();
    let outcome: AttemptOutcome;
    try {
      const secret = this.secrets.open(delivery.secretEncrypted, delivery.webhookId);
      const headers = signWebhook(secret, delivery.eventId, at, delivery.payload);
      const request = { url: delivery.url, headers: { ...headers }, body: delivery.payload };
      outcome = await this.sender.send(request, this.stopping.signal);
    } catch (error) {
      this.logger.warn({ err: error, webhookId: delivery.webhookId }, 'webhook secret cannot be opened');
      outcome = { delivered: false, status: null, error: 'secret cannot be opened' };
    }
    if (this.stopping.signal.aborted) return;
    const attempts = delivery.attempts + 1;
    const next = outcome.delivered ? null : nextAttemptAt(delivery.createdAt, at, attempts);
    const status = outcome.delivered ? 'succeeded' : next === null ? 'failed' : 'pending';
    try {
      await this.unitOfWork.run((tx) =>
        this.deliveries.recordAttempt(
          {
            id: delivery.id,
            claim,
            status,
            nextAttemptAt: next,
            at,
            responseStatus: outcome.status,
            error: outcome.error,
          },
          tx,
        ),
      );
    } catch (error) {
      this.logger.warn({ err: error, deliveryId: delivery.id }, 'webhook attempt not recorded; it will be made again');
    }
    if (!outcome.delivered) {
      const context = { webhookId: delivery.webhookId, deliveryId: delivery.id, attempts, status: outcome.status };
      this.logger.log({ ...context, error: outcome.error, gaveUp: next === null }, 'webhook delivery attempt failed');
    }
  }

  /** Whether any webhook exists, asked at start and now and then while none is known. */
  private async check(): Promise<void> {
    this.checkedAt = performance.now();
    try {
      this.active = await this.webhooks.hasAny();
    } catch (error) {
      this.logger.warn({ err: error }, 'webhooks: cannot tell whether any exists; trying again later');
    }
  }

  private schedule(delay?: number): void {
    if (!this.started) return;
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.tick(), delay ?? (this.active ? this.pollMs : IDLE_CHECK_MS));
    this.timer.unref();
  }

  private async tick(): Promise<void> {
    if (!this.active || performance.now() - this.checkedAt >= IDLE_CHECK_MS) await this.check();
    if (this.active) await this.run();
    else this.schedule();
  }
}
