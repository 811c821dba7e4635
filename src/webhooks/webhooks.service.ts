import { randomUUID } from 'node:crypto';
import { Inject, Injectable } from '@nestjs/common';
import { AuditService } from '../audit/audit.service';
import type { RequestContext } from '../audit/request-context';
import { AppError, tooManyRequests } from '../common/errors';
import { FAILURE_COUNTER, FailureCounter } from '../common/failure-counter';
import { LIST_WINDOW, Page } from '../common/pagination';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { UnitOfWork } from '../database/unit-of-work';
import type { Principal } from '../identity/principal';
import { Metrics } from '../metrics/metrics';
import { DeliveryDetail, DeliveryRecord, WebhookDeliveriesRepository } from './webhook-deliveries.repository';
import { WebhookDispatcher } from './webhook-dispatcher';
import { eventMask, isWebhookEventType, outboxEvent, TEST_EVENT } from './webhook-events';
import { WebhookOutbox } from './webhook-outbox';
import { WebhookSecrets } from './webhook-secrets';
import { newWebhookSecret } from './webhook-signer';
import { checkWebhookUrl, WebhookMessages } from './webhook-url';
import { WebhookRecord, WebhooksRepository } from './webhooks.repository';

/** Endpoints one organization may have (docs/webhooks.md#managing-endpoints). */
export const MAX_WEBHOOKS_PER_ORGANIZATION = 10;
/**
 * The window of the limit on test deliveries and resends, WEBHOOK_TESTS_PER_MINUTE of them together per organization
 * (docs/webhooks.md#limits).
 */
const TEST_WINDOW_MS = 60_000;
/** How long a rotated-out secret signs beside the new one unless the request says (docs/webhooks.md#rotating-the-secret). */
export const DEFAULT_SECRET_OVERLAP_SECONDS = 86_400;
/** The longest overlap a rotation may ask for: 7 days. */
export const MAX_SECRET_OVERLAP_SECONDS = 7 * 86_400;

export interface NewWebhookInput {
  url: string;
  events: readonly string[];
}

export interface PageQuery {
  page: number;
  limit: number;
}

const notFoundError = (): AppError => new AppError('webhook_not_found');

/** An organization's endpoints, their delivery logs and test deliveries, for its admins. */
@Injectable()
export class WebhooksService {
  private readonly production: boolean;
  private readonly testsPerMinute: number;
  private readonly maxPending: number;

  constructor(
    private readonly webhooks: WebhooksRepository,
    private readonly deliveries: WebhookDeliveriesRepository,
    private readonly secrets: WebhookSecrets,
    private readonly outbox: WebhookOutbox,
    private readonly dispatcher: WebhookDispatcher,
    private readonly audit: AuditService,
    private readonly unitOfWork: UnitOfWork,
    @Inject(FAILURE_COUNTER) private readonly counter: FailureCounter,
    private readonly metrics: Metrics,
    @InjectConfig() config: AppConfiguration,
  ) {
    this.production = config.production;
    this.testsPerMinute = config.webhooks.testsPerMinute;
    this.maxPending = config.webhooks.maxPendingPerEndpoint;
  }

  /** The endpoint and its secret, which exists outside the database only in this answer (sealed at rest). */
  async create(
    caller: Principal,
    input: NewWebhookInput,
    request?: RequestContext,
  ): Promise<{ webhook: WebhookRecord; secret: string }> {
    const url = checkWebhookUrl(input.url, this.production);
    const events = input.events;
    if (events.length === 0 || new Set(events).size !== events.length || !events.every(isWebhookEventType)) {
      throw new AppError('webhook_events_invalid', { message: WebhookMessages.eventsInvalid });
    }
    const webhook: WebhookRecord = {
      id: randomUUID(),
      organizationId: caller.organizationId,
      url,
      events: eventMask(events),
      createdAt: new Date(),
      disabledAt: null,
      previousSecretExpiresAt: null,
    };
    const secret = newWebhookSecret();
    const created = await this.unitOfWork.run(async (tx) => {
      const sealed = this.secrets.seal(secret, webhook.id);
      if (!(await this.webhooks.insertWithinCap(webhook, sealed, MAX_WEBHOOKS_PER_ORGANIZATION, tx))) return false;
      await this.audit.record({ action: 'webhook.created', ...this.actor(caller, webhook.id), request }, tx);
      return true;
    });
    if (!created) throw new AppError('webhook_limit_reached');
    this.dispatcher.wake();
    return { webhook, secret };
  }

  /** Outside production a URL on this machine is accepted (checkWebhookUrl), so that local trials can receive. */
  get loopbackUrlsAllowed(): boolean {
    return !this.production;
  }

  async list(caller: Principal, query: PageQuery): Promise<Page<WebhookRecord>> {
    const [items, totalCount] = await this.webhooks.findPage(caller.organizationId, query.limit, offsetOf(query));
    return { items, page: query.page, limit: query.limit, totalCount };
  }

  /** Deletes the endpoint and its deliveries, pending ones included; another organization's is 404. */
  async remove(caller: Principal, id: string, request?: RequestContext): Promise<WebhookRecord> {
    const removed = await this.unitOfWork.run(async (tx) => {
      const webhook = await this.webhooks.delete(caller.organizationId, id, tx);
      if (webhook === undefined) return undefined;
      await this.deliveries.deleteOfWebhook(id, tx);
      await this.audit.record({ action: 'webhook.deleted', ...this.actor(caller, id), request }, tx);
      return webhook;
    });
    if (removed === undefined) throw notFoundError();
    return removed;
  }

  /** The endpoint's delivery log, newest first, within the list window. */
  async deliveryLog(caller: Principal, id: string, query: PageQuery): Promise<Page<DeliveryRecord>> {
    await this.get(caller, id);
    const offset = offsetOf(query);
    const limit = Math.max(0, Math.min(query.limit, LIST_WINDOW - offset));
    const [items, totalCount] = await this.deliveries.findPage(id, limit, offset);
    return { items, page: query.page, limit: query.limit, totalCount };
  }

  /**
   * A `webhook.test` event for this endpoint only, delivered at once like any other; at most WEBHOOK_TESTS_PER_MINUTE
   * per organization (429 past it), and none to a disabled endpoint.
   */
  async test(caller: Principal, id: string): Promise<DeliveryRecord> {
    const webhook = await this.get(caller, id);
    if (webhook.disabledAt !== null) throw new AppError('webhook_disabled');
    await this.reserveManualSend(caller, 'too_many_webhook_tests');
    const event = outboxEvent(
      TEST_EVENT,
      caller.organizationId,
      new Date(),
      { organization_id: caller.organizationId, webhook_id: id },
      { dedupeKey: null, webhookId: id },
    );
    const [deliveryId] = await this.outbox.write([event], undefined);
    // Deleted meanwhile.
    if (deliveryId === undefined) throw notFoundError();
    const [delivery] = await this.deliveries.findByIds([deliveryId]);
    if (delivery === undefined) throw notFoundError();
    return delivery;
  }

  /**
   * Enables a disabled endpoint again (docs/webhooks.md#disabled-endpoints): its count of failures starts over, its
   * parked deliveries are due at once, and new events reach it. Recorded as `webhook.enabled`; an active endpoint is
   * answered as it is, and nothing is recorded.
   */
  async enable(caller: Principal, id: string, request?: RequestContext): Promise<WebhookRecord> {
    const enabled = await this.unitOfWork.run(async (tx) => {
      const webhook = await this.webhooks.enableDisabled(caller.organizationId, id, tx);
      if (webhook === undefined) return undefined;
      await this.deliveries.resumeOfWebhook(id, new Date(), tx);
      await this.audit.record({ action: 'webhook.enabled', ...this.actor(caller, id), request }, tx);
      return webhook;
    });
    if (enabled === undefined) return this.get(caller, id);
    this.dispatcher.wake();
    return enabled;
  }

  /** One delivery of the endpoint with the body sent and its last answer; another endpoint's delivery is 404. */
  async deliveryDetail(caller: Principal, id: string, deliveryId: string): Promise<DeliveryDetail> {
    await this.get(caller, id);
    const delivery = await this.deliveries.findDetail(id, deliveryId);
    if (delivery === undefined) throw new AppError('webhook_delivery_not_found');
    return delivery;
  }

  /**
   * A new delivery of the event a delivery carried, to the same endpoint, sent at once and retried like any other
   * (docs/webhooks.md#resending): the same body and `webhook-id` (Standard Webhooks' idempotency key: a receiver that
   * processed the event already recognises it), signed anew at each attempt. Counted with the test deliveries
   * (WEBHOOK_TESTS_PER_MINUTE per organization, 429 past it); none to a disabled endpoint.
   */
  async resend(caller: Principal, id: string, deliveryId: string): Promise<DeliveryRecord> {
    const webhook = await this.get(caller, id);
    if (webhook.disabledAt !== null) throw new AppError('webhook_disabled');
    if ((await this.deliveries.findDetail(id, deliveryId)) === undefined) {
      throw new AppError('webhook_delivery_not_found');
    }
    await this.reserveManualSend(caller, 'too_many_webhook_resends');
    const resent = await this.unitOfWork.run(async (tx) => {
      const written = await this.deliveries.resend(id, deliveryId, new Date(), this.maxPending, tx);
      if (written !== undefined) this.unitOfWork.afterCommit(tx, () => this.dispatcher.wake());
      return written;
    });
    // Deleted meanwhile (with its endpoint, or pruned).
    if (resent === undefined) throw new AppError('webhook_delivery_not_found');
    if (resent.dropped > 0) this.metrics.webhookDeliveriesDropped(resent.dropped);
    const [delivery] = await this.deliveries.findByIds([resent.id]);
    if (delivery === undefined) throw new AppError('webhook_delivery_not_found');
    return delivery;
  }

  /**
   * A new secret for the endpoint, shown in this answer only (docs/webhooks.md#rotating-the-secret). For
   * `overlapSeconds` (0 to 7 days, 24 hours unless said) every delivery carries a signature with each secret, so a
   * receiver verifying with either accepts it while it moves to the new one; then the old one signs nothing. A secret an
   * earlier rotation still kept is dropped. Recorded as `webhook.secret_rotated`, its `changes` the overlap's end.
   */
  async rotateSecret(
    caller: Principal,
    id: string,
    overlapSeconds: number = DEFAULT_SECRET_OVERLAP_SECONDS,
    request?: RequestContext,
  ): Promise<{ webhook: WebhookRecord; secret: string }> {
    const before = await this.get(caller, id);
    const secret = newWebhookSecret();
    const now = new Date();
    const until = overlapSeconds > 0 ? new Date(now.getTime() + overlapSeconds * 1000) : null;
    const rotated = await this.unitOfWork.run(async (tx) => {
      const webhook = await this.webhooks.rotateSecret(
        caller.organizationId,
        id,
        this.secrets.seal(secret, id),
        until,
        tx,
      );
      if (webhook === undefined) return undefined;
      const changes = {
        previous_secret_expires_at: {
          before: before.previousSecretExpiresAt?.toISOString() ?? null,
          after: until?.toISOString() ?? null,
        },
      };
      await this.audit.record({ action: 'webhook.secret_rotated', ...this.actor(caller, id), changes, request }, tx);
      return webhook;
    });
    // Deleted meanwhile.
    if (rotated === undefined) throw notFoundError();
    return { webhook: rotated, secret };
  }

  /** A slot of the organization's test deliveries and resends (WEBHOOK_TESTS_PER_MINUTE together), or 429. */
  private async reserveManualSend(
    caller: Principal,
    reason: 'too_many_webhook_tests' | 'too_many_webhook_resends',
  ): Promise<void> {
    const slot = await this.counter.reserve(
      `webhook-tests:${caller.organizationId}`,
      this.testsPerMinute,
      TEST_WINDOW_MS,
    );
    if (slot.granted) return;
    this.metrics.rateLimited('webhook_tests');
    throw tooManyRequests(reason, slot.resetsInMs);
  }

  private async get(caller: Principal, id: string): Promise<WebhookRecord> {
    const webhook = await this.webhooks.findById(caller.organizationId, id);
    if (webhook === undefined) throw notFoundError();
    return webhook;
  }

  private actor(caller: Principal, webhookId: string) {
    return {
      organizationId: caller.organizationId,
      actorUserId: caller.userId,
      actorApiKeyId: caller.credentialId ?? null,
      targetType: 'webhook' as const,
      targetId: webhookId,
    };
  }
}

function offsetOf(query: PageQuery): number {
  return (query.page - 1) * query.limit;
}
