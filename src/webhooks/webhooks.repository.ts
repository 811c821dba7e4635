import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { toDate } from '../database/columns';
import { Dialect, param, raw, sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';

/** An endpoint as the API shows it (never its secret). */
export interface WebhookRecord {
  id: string;
  organizationId: string;
  url: string;
  /** The events it receives, as a bit mask (webhook-events.ts). */
  events: number;
  createdAt: Date;
  /** Since when nothing is sent to it (docs/webhooks.md#disabled-endpoints); null while it is active. */
  disabledAt: Date | null;
  /**
   * Until when the secret its last rotation replaced still signs deliveries beside the new one
   * (docs/webhooks.md#rotating-the-secret); null when none does (any more).
   */
  previousSecretExpiresAt: Date | null;
}

/** An endpoint an event may go to: the outbox's read. */
export interface Subscriber {
  id: string;
  organizationId: string;
  events: number;
}

type WebhookRow = {
  id: string;
  organization_id: string;
  url: string;
  events: number | string;
  created_at: Date | string;
  disabled_at: Date | string | null;
  previous_secret_expires_at: Date | string | null;
};
type Scoped = { id: string; organizationId: string };
type OrganizationPage = { organizationId: string; limit: number; offset: number };
type Rotation = Scoped & { secretEncrypted: string; keep: number; until: string | null };

/** The advisory lock class of an organization's webhook creations ("whks"), so that two cannot pass the cap. */
const CREATION_LOCK = 0x77686b73;
const COLUMNS = 'id, organization_id, url, events, created_at, disabled_at, previous_secret_expires_at';

const toWebhook = (row: WebhookRow): WebhookRecord => ({
  id: row.id,
  organizationId: row.organization_id,
  url: row.url,
  events: Number(row.events),
  createdAt: toDate(row.created_at),
  disabledAt: row.disabled_at === null ? null : toDate(row.disabled_at),
  previousSecretExpiresAt: stillSigning(row.previous_secret_expires_at),
});

/** A rotation's previous secret's end, while it has not passed (the scheduler clears it later). */
function stillSigning(value: Date | string | null): Date | null {
  if (value === null) return null;
  const until = toDate(value);
  return until.getTime() > Date.now() ? until : null;
}

/** Every query on webhooks: an organization's endpoints (docs/adr/0037-signed-webhooks.md). */
@Injectable()
export class WebhooksRepository {
  private readonly db: Dialect;
  private readonly creationLock: Statement<{ organizationId: string }> | null;
  private readonly countOf: Statement<{ organizationId: string }>;
  private readonly insert: Statement<WebhookRecord & { secretEncrypted: string; createdAtText: string }>;
  private readonly page: Statement<OrganizationPage>;
  private readonly byId: Statement<Scoped>;
  private readonly remove: Statement<Scoped>;
  private readonly any: Statement<Record<string, never>>;
  private readonly subscribedTo: Statement<{ bit: number }>;
  private readonly ofOrganizations: Statement<{ ids: readonly string[] }>;
  private readonly failed: Statement<{ id: string }>;
  private readonly succeeded: Statement<{ id: string }>;
  private readonly disable: Statement<{ id: string; at: string; threshold: number }>;
  private readonly enable: Statement<Scoped>;
  private readonly rotate: Statement<Rotation>;
  private readonly clearPrevious: Statement<{ now: string }>;

  constructor(@InjectDataSource() dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    const lock = db.transactionLock(CREATION_LOCK, sql`${db.cast(param('organizationId'), 'text')}`);
    this.creationLock = lock === null ? null : db.prepare(lock);
    const organization = sql`organization_id = ${param('organizationId')}`;
    this.countOf = db.prepare(sql`SELECT COUNT(*) AS count FROM webhooks WHERE ${organization}`);
    this.insert = db.prepare(sql`INSERT INTO webhooks (id, organization_id, url, events, secret_encrypted, created_at)
      VALUES (${param('id')}, ${param('organizationId')}, ${param('url')}, ${param('events')},
        ${param('secretEncrypted')}, ${param('createdAtText')})`);
    this.page = db.prepare(sql`SELECT ${raw(COLUMNS)} FROM webhooks WHERE ${organization}
      ORDER BY created_at DESC, id DESC LIMIT ${param('limit')} OFFSET ${param('offset')}`);
    const scoped = sql`id = ${param('id')} AND ${organization}`;
    this.byId = db.prepare(sql`SELECT ${raw(COLUMNS)} FROM webhooks WHERE ${scoped}`);
    this.remove = db.prepare(
      db.returning(sql`DELETE FROM webhooks WHERE ${scoped} RETURNING ${raw(COLUMNS)}`, COLUMNS),
    );
    this.any = db.prepare(sql`SELECT id FROM webhooks LIMIT 1`);
    this.subscribedTo = db.prepare(
      sql`SELECT DISTINCT organization_id FROM webhooks WHERE (events & ${param('bit')}) <> 0`,
    );
    this.ofOrganizations = db.prepare(
      sql`SELECT id, organization_id, events FROM webhooks WHERE ${db.idIn('organization_id', 'ids')}
        AND disabled_at IS NULL`,
    );
    const id = sql`id = ${param('id')}`;
    this.failed = db.prepare(
      db.returning(
        sql`UPDATE webhooks SET consecutive_failures = consecutive_failures + 1 WHERE ${id} RETURNING disabled_at`,
        'disabled_at',
      ),
    );
    this.succeeded = db.prepare(
      sql`UPDATE webhooks SET consecutive_failures = 0 WHERE ${id} AND consecutive_failures <> 0`,
    );
    // Once, by whichever attempt finds the count at the threshold first: PostgreSQL re-checks the row it waited for.
    this.disable = db.prepare(sql`UPDATE webhooks SET disabled_at = ${param('at')}
      WHERE ${id} AND disabled_at IS NULL AND consecutive_failures >= ${param('threshold')}`);
    this.enable = db.prepare(
      db.returning(
        sql`UPDATE webhooks SET disabled_at = NULL, consecutive_failures = 0
          WHERE ${scoped} AND disabled_at IS NOT NULL RETURNING ${raw(COLUMNS)}`,
        COLUMNS,
      ),
    );
    // The right-hand sides read the row as it was: the previous secret is the one being replaced.
    this.rotate = db.prepare(
      db.returning(
        sql`UPDATE webhooks SET
            previous_secret_encrypted = CASE WHEN ${param('keep')} = 1 THEN secret_encrypted ELSE NULL END,
            previous_secret_expires_at = ${param('until')}, secret_encrypted = ${param('secretEncrypted')}
          WHERE ${scoped} RETURNING ${raw(COLUMNS)}`,
        COLUMNS,
      ),
    );
    this.clearPrevious = db.prepare(sql`UPDATE webhooks SET previous_secret_encrypted = NULL,
      previous_secret_expires_at = NULL WHERE previous_secret_expires_at <= ${param('now')}`);
  }

  /**
   * Replaces the organization's endpoint's secret (sealed) in one statement; the secret it replaces signs beside it
   * until `until`, or is dropped at once when `until` is null (as is the one an earlier rotation kept). The endpoint as
   * it is now, or undefined when the organization has no such endpoint.
   */
  async rotateSecret(
    organizationId: string,
    id: string,
    secretEncrypted: string,
    until: Date | null,
    tx: Transaction,
  ): Promise<WebhookRecord | undefined> {
    const [row] = await this.db.run<WebhookRow, Rotation>(tx, this.rotate, {
      id,
      organizationId,
      secretEncrypted,
      keep: until === null ? 0 : 1,
      until: until?.toISOString() ?? null,
    });
    return row === undefined ? undefined : toWebhook(row);
  }

  /** Forgets every previous secret whose overlap has ended (the scheduler). */
  async clearEndedOverlaps(now: Date, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.clearPrevious, { now: now.toISOString() });
  }

  /** Inserts the endpoint unless its organization already has `max`, under the organization's lock. */
  async insertWithinCap(
    webhook: WebhookRecord,
    secretEncrypted: string,
    max: number,
    tx: Transaction,
  ): Promise<boolean> {
    const organizationId = webhook.organizationId;
    if (this.creationLock !== null) await this.db.run(tx, this.creationLock, { organizationId });
    const [{ count }] = await this.db.run<{ count: number | string }, { organizationId: string }>(tx, this.countOf, {
      organizationId,
    });
    if (Number(count) >= max) return false;
    await this.db.run(tx, this.insert, { ...webhook, secretEncrypted, createdAtText: webhook.createdAt.toISOString() });
    return true;
  }

  /** A page of the organization's endpoints, newest first, and how many it has. */
  async findPage(organizationId: string, limit: number, offset: number): Promise<[WebhookRecord[], number]> {
    const rows = await this.db.rows<WebhookRow, OrganizationPage>(this.page, { organizationId, limit, offset });
    const [{ count }] = await this.db.rows<{ count: number | string }, { organizationId: string }>(this.countOf, {
      organizationId,
    });
    return [rows.map(toWebhook), Number(count)];
  }

  async findById(organizationId: string, id: string): Promise<WebhookRecord | undefined> {
    const [row] = await this.db.rows<WebhookRow, Scoped>(this.byId, { id, organizationId });
    return row === undefined ? undefined : toWebhook(row);
  }

  /** Deletes the organization's endpoint; undefined when it has no such endpoint. */
  async delete(organizationId: string, id: string, tx: Transaction): Promise<WebhookRecord | undefined> {
    const [row] = await this.db.run<WebhookRow, Scoped>(tx, this.remove, { id, organizationId });
    return row === undefined ? undefined : toWebhook(row);
  }

  /**
   * A failed attempt for its endpoint's health (docs/webhooks.md#disabled-endpoints): one more failure in a row; the
   * endpoint is disabled at `threshold`. Whether it is disabled now, and whether by this failure.
   */
  async recordFailure(
    id: string,
    threshold: number,
    at: Date,
    tx: Transaction,
  ): Promise<{ disabled: boolean; byThis: boolean }> {
    const [row] = await this.db.run<{ disabled_at: unknown }, { id: string }>(tx, this.failed, { id });
    if (row === undefined) return { disabled: false, byThis: false };
    if (row.disabled_at !== null) return { disabled: true, byThis: false };
    const byThis = (await this.db.affected(tx, this.disable, { id, at: at.toISOString(), threshold })) > 0;
    return { disabled: byThis, byThis };
  }

  /** A delivered attempt: the endpoint's failures in a row start over. */
  async recordSuccess(id: string, tx: Transaction): Promise<void> {
    await this.db.run(tx, this.succeeded, { id });
  }

  /** Enables the organization's disabled endpoint: the endpoint, or undefined when it has none such disabled. */
  async enableDisabled(organizationId: string, id: string, tx: Transaction): Promise<WebhookRecord | undefined> {
    const [row] = await this.db.run<WebhookRow, Scoped>(tx, this.enable, { id, organizationId });
    return row === undefined ? undefined : toWebhook(row);
  }

  async hasAny(): Promise<boolean> {
    return (await this.db.rows(this.any, {})).length > 0;
  }

  /** The organizations with an endpoint subscribed to the event of this bit. */
  async organizationsSubscribedTo(bit: number): Promise<string[]> {
    const rows = await this.db.rows<{ organization_id: string }, { bit: number }>(this.subscribedTo, { bit });
    return rows.map((row) => row.organization_id);
  }

  /** The endpoints of these organizations, read inside the change's transaction (the outbox). */
  async subscribersOf(organizationIds: readonly string[], tx: Transaction): Promise<Subscriber[]> {
    const rows = await this.db.run<WebhookRow, { ids: readonly string[] }>(tx, this.ofOrganizations, {
      ids: organizationIds,
    });
    return rows.map((row) => ({ id: row.id, organizationId: row.organization_id, events: Number(row.events) }));
  }
}
