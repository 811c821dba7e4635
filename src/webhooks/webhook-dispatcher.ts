import { randomUUID } from 'node:crypto';
import { performance } from 'node:perf_hooks';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { AuditService } from '../audit/audit.service';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { UnitOfWork } from '../database/unit-of-work';
import { Metrics } from '../metrics/metrics';
import { ClaimedDelivery, DueDelivery, WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { nextAttemptAt } from './webhook-retries';
import { WebhookSecrets } from './webhook-secrets';
import { AttemptOutcome, WebhookSender } from './webhook-sender';
import { redactSecrets, signWebhook } from './webhook-signer';
import { WebhookWakeup } from './webhook-wakeup';
import { WebhooksRepository } from './webhooks.repository';

/** Without any webhook, how often an instance looks whether one was made at another instance. */
const IDLE_CHECK_MS = 5 * 60 * 1000;
/** Due deliveries read per claim, for each free place: room to skip those whose endpoint is full. */
const READ_PER_PLACE = 2;

/** Attempts in flight at this instance, by organization and by endpoint. */
class InFlight {
  readonly attempts = new Map<string, Promise<void>>();
  private readonly organizations = new Map<string, number>();
  private readonly endpoints = new Map<string, number>();

  get size(): number {
    return this.attempts.size;
  }

  ofOrganization(id: string): number {
    return this.organizations.get(id) ?? 0;
  }

  ofEndpoint(id: string): number {
    return this.endpoints.get(id) ?? 0;
  }

  /** The organizations and endpoints at their cap. */
  full(organizationCap: number, endpointCap: number): { organizations: string[]; endpoints: string[] } {
    const at = (counts: Map<string, number>, cap: number) => [...counts].filter(([, n]) => n >= cap).map(([id]) => id);
    return { organizations: at(this.organizations, organizationCap), endpoints: at(this.endpoints, endpointCap) };
  }

  add(delivery: ClaimedDelivery, attempt: Promise<void>): void {
    this.attempts.set(delivery.id, attempt);
    bump(this.organizations, delivery.organizationId, 1);
    bump(this.endpoints, delivery.webhookId, 1);
  }

  remove(delivery: ClaimedDelivery): void {
    this.attempts.delete(delivery.id);
    bump(this.organizations, delivery.organizationId, -1);
    bump(this.endpoints, delivery.webhookId, -1);
  }
}

function bump(counts: Map<string, number>, id: string, by: number): void {
  const count = (counts.get(id) ?? 0) + by;
  if (count > 0) counts.set(id, count);
  else counts.delete(id);
}

/**
 * Delivers the outbox (docs/webhooks.md#retries, docs/adr/0037-signed-webhooks.md): at once for a change committed at
 * this instance, every WEBHOOK_POLL_INTERVAL_MS for retries and the other instances' changes while webhooks exist.
 * Each due delivery is claimed by one instance for a lease longer than an attempt can take; the outcome is recorded
 * under that claim, so a crash mid-attempt only means the delivery is attempted again once the lease lapses.
 *
 * Fair to every organization (docs/adr/0045-fair-webhook-delivery.md): up to WEBHOOK_CONCURRENCY attempts run at once,
 * at most WEBHOOK_ORGANIZATION_CONCURRENCY of them for one organization and WEBHOOK_ENDPOINT_CONCURRENCY for one
 * endpoint; a place that frees is filled at once, taking due deliveries from each organization in turn. So an
 * organization whose endpoints hang holds a few places for WEBHOOK_TIMEOUT_MS, never the others' turn. An endpoint
 * that fails WEBHOOK_DISABLE_AFTER_FAILURES attempts in a row is disabled (`webhook.disabled`).
 */
@Injectable()
export class WebhookDispatcher implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(WebhookDispatcher.name);
  private readonly sender: WebhookSender;
  private readonly pollMs: number;
  private readonly leaseMs: number;
  private readonly concurrency: number;
  private readonly organizationCap: number;
  private readonly endpointCap: number;
  private readonly disableAfter: number;
  private readonly stopping = new AbortController();
  private readonly inFlight = new InFlight();
  private timer: NodeJS.Timeout | undefined;
  /** The claims under way (one at a time); `again` makes it look once more when it is done. */
  private claiming: Promise<void> | undefined;
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
    private readonly audit: AuditService,
    private readonly metrics: Metrics,
    wakeup: WebhookWakeup,
    @InjectConfig() config: AppConfiguration,
    private readonly adapterHost: HttpAdapterHost,
  ) {
    // Outside production a receiver may listen on loopback (tests, local trials); never elsewhere.
    this.sender = new WebhookSender(config.webhooks.timeoutMs, !config.production);
    this.pollMs = config.webhooks.pollIntervalMs;
    this.leaseMs = 2 * config.webhooks.timeoutMs + 10_000;
    this.concurrency = config.webhooks.concurrency;
    this.organizationCap = Math.min(config.webhooks.organizationConcurrency, this.concurrency);
    this.endpointCap = Math.min(config.webhooks.endpointConcurrency, this.organizationCap);
    this.disableAfter = config.webhooks.disableAfterFailures;
    wakeup.listen(() => this.wake());
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
    await this.claiming;
    await Promise.all(this.inFlight.attempts.values());
  }

  /**
   * The secrets an attempt at `at` is signed with: the endpoint's, then a rotation's previous one while its overlap
   * lasts (docs/webhooks.md#rotating-the-secret). Throws when one cannot be opened.
   */
  private signingSecrets(delivery: ClaimedDelivery, at: Date): string[] {
    const secrets = [this.secrets.open(delivery.secretEncrypted, delivery.webhookId)];
    const previous = delivery.previousSecretEncrypted;
    const until = delivery.previousSecretExpiresAt;
    if (previous !== null && until !== null && until.getTime() > at.getTime()) {
      secrets.push(this.secrets.open(previous, delivery.webhookId));
    }
    return secrets;
  }

  /** Whether any webhook exists, as far as this instance knows (asked at start, then every 5 minutes). */
  get knowsWebhooks(): boolean {
    return this.active;
  }

  /** A change with deliveries committed at this instance, or a webhook made here: deliver now. */
  wake(): void {
    if (!this.started) return;
    const known = this.active;
    this.active = true;
    // From the idle check's long wait to the short poll: retries follow.
    if (!known) this.schedule();
    void this.fill();
  }

  /**
   * Claims and attempts the due deliveries until none is due and no attempt is in flight (the poll and tests; the
   * places of the attempts are filled as they free, without waiting for this).
   */
  async run(): Promise<void> {
    do {
      await this.fill();
      await Promise.all(this.inFlight.attempts.values());
    } while ((this.inFlight.size > 0 || this.claiming !== undefined) && !this.stopping.signal.aborted);
  }

  /** Fills the free places with due deliveries; a call while it does makes it look once more. */
  private fill(): Promise<void> {
    if (this.claiming !== undefined) {
      this.again = true;
      return this.claiming;
    }
    const claiming = this.claims().finally(() => {
      this.claiming = undefined;
    });
    this.claiming = claiming;
    return claiming;
  }

  private async claims(): Promise<void> {
    do {
      this.again = false;
      try {
        while (!this.stopping.signal.aborted && (await this.claim()));
      } catch (error) {
        this.logger.warn({ err: error }, 'webhook delivery claim failed; the next poll tries again');
      }
    } while (this.again && !this.stopping.signal.aborted);
  }

  /** One claim for the free places, its attempts started; false when nothing more can be started now. */
  private async claim(): Promise<boolean> {
    const free = this.concurrency - this.inFlight.size;
    if (free <= 0) return false;
    const now = new Date();
    if (!(await this.deliveries.anyDue(now))) return false;
    const full = this.inFlight.full(this.organizationCap, this.endpointCap);
    const due = await this.deliveries.dueFairly(now, {
      perEndpoint: this.endpointCap,
      perOrganization: this.organizationCap,
      limit: free * READ_PER_PLACE,
      busyEndpoints: full.endpoints,
      busyOrganizations: full.organizations,
    });
    const chosen = this.choose(due, free);
    if (chosen.length === 0) return false;
    const claim = randomUUID();
    const leaseUntil = new Date(now.getTime() + this.leaseMs);
    const claimed = await this.unitOfWork.run((tx) => this.deliveries.claim(chosen, now, leaseUntil, claim, tx));
    for (const delivery of claimed) {
      const attempt = this.attempt(delivery, claim).finally(() => {
        this.inFlight.remove(delivery);
        // A place is free: fill it (the deliveries that waited for it are due already).
        if (!this.stopping.signal.aborted) void this.fill();
      });
      this.inFlight.add(delivery, attempt);
    }
    return claimed.length > 0;
  }

  /** The due deliveries to claim, in the fair order read, within the places left to each organization and endpoint. */
  private choose(due: readonly DueDelivery[], free: number): string[] {
    const organizations = new Map<string, number>();
    const endpoints = new Map<string, number>();
    const chosen: string[] = [];
    for (const delivery of due) {
      if (chosen.length >= free) break;
      const organization =
        this.inFlight.ofOrganization(delivery.organizationId) + (organizations.get(delivery.organizationId) ?? 0);
      const endpoint = this.inFlight.ofEndpoint(delivery.webhookId) + (endpoints.get(delivery.webhookId) ?? 0);
      if (organization >= this.organizationCap || endpoint >= this.endpointCap) continue;
      bump(organizations, delivery.organizationId, 1);
      bump(endpoints, delivery.webhookId, 1);
      chosen.push(delivery.id);
    }
    return chosen;
  }

  private async attempt(delivery: ClaimedDelivery, claim: string): Promise<void> {
    const at = new Date();
    let outcome: AttemptOutcome;
    let secrets: string[] = [];
    try {
      secrets = this.signingSecrets(delivery, at);
    } catch (error) {
      this.logger.warn({ err: error, webhookId: delivery.webhookId }, 'webhook secret cannot be opened');
    }
    if (secrets.length === 0) {
      outcome = { delivered: false, status: null, error: 'secret cannot be opened', response: null, durationMs: 0 };
    } else {
      const headers = signWebhook(secrets, delivery.eventId, at, delivery.payload);
      const request = { url: delivery.url, headers: { ...headers }, body: delivery.payload };
      outcome = await this.sender.send(request, this.stopping.signal);
    }
    // What the receiver sent back is shown to the organization's admins: never with a secret in it.
    const response =
      outcome.response === null
        ? null
        : {
            headers: Object.fromEntries(
              Object.entries(outcome.response.headers).map(([name, value]) => [name, redactSecrets(value, secrets)]),
            ),
            body: redactSecrets(outcome.response.body, secrets),
            truncated: outcome.response.truncated,
          };
    if (this.stopping.signal.aborted) return;
    const attempts = delivery.attempts + 1;
    const next = outcome.delivered ? null : nextAttemptAt(delivery.createdAt, at, attempts);
    const status = outcome.delivered ? 'succeeded' : next === null ? 'failed' : 'pending';
    let disabled = false;
    try {
      disabled = await this.unitOfWork.run(async (tx) => {
        const kept = await this.deliveries.recordAttempt(
          {
            id: delivery.id,
            claim,
            status,
            nextAttemptAt: next,
            at,
            responseStatus: outcome.status,
            error: outcome.error,
            durationMs: outcome.durationMs,
            response,
          },
          tx,
        );
        if (!kept) return false;
        if (outcome.delivered) {
          await this.webhooks.recordSuccess(delivery.webhookId, tx);
          return false;
        }
        const health = await this.webhooks.recordFailure(delivery.webhookId, this.disableAfter, at, tx);
        // Disabled (by this failure, or meanwhile by another): this delivery waits with the others.
        if (health.disabled) await this.deliveries.parkOfWebhook(delivery.webhookId, tx);
        if (!health.byThis) return false;
        await this.audit.record(
          {
            action: 'webhook.disabled',
            organizationId: delivery.organizationId,
            targetType: 'webhook',
            targetId: delivery.webhookId,
            reason: 'consecutive_failures',
          },
          tx,
        );
        return true;
      });
    } catch (error) {
      this.logger.warn({ err: error, deliveryId: delivery.id }, 'webhook attempt not recorded; it will be made again');
    }
    if (!outcome.delivered) {
      const context = { webhookId: delivery.webhookId, deliveryId: delivery.id, attempts, status: outcome.status };
      this.logger.log({ ...context, error: outcome.error, gaveUp: next === null }, 'webhook delivery attempt failed');
    }
    if (disabled) {
      this.metrics.webhookEndpointDisabled();
      this.logger.warn(
        { webhookId: delivery.webhookId, failures: this.disableAfter },
        'webhook endpoint disabled after failed attempts in a row',
      );
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

  /** The poll: fills the free places (without waiting for the attempts), then waits for the next. */
  private async tick(): Promise<void> {
    if (!this.active || performance.now() - this.checkedAt >= IDLE_CHECK_MS) await this.check();
    if (this.active) await this.fill();
    this.schedule();
  }
}
