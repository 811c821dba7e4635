import { Injectable } from '@nestjs/common';
import { InjectDataSource } from '@nestjs/typeorm';
import { DataSource } from 'typeorm';
import { EntityRows, RawRow } from '../database/entity-rows';
import { Dialect, param, raw, sql, Statement } from '../database/sql';
import type { Transaction } from '../database/unit-of-work';
import { IntegrationType, NotificationIntegration } from './integration.entity';

/** The columns an update may change (the id, the organization and the creation are fixed). */
export type IntegrationChanges = Pick<
  NotificationIntegration,
  | 'name'
  | 'site'
  | 'apiKeyLast4'
  | 'applicationKeyLast4'
  | 'apiKeyEncrypted'
  | 'applicationKeyEncrypted'
  | 'validation'
  | 'updatedAt'
>;

type OwnedArgs = { organizationId: string; id: string };

/** The changeable columns of IntegrationChanges as statement arguments (validation as JSON text). */
type ChangeArgs = Omit<IntegrationChanges, 'validation' | 'updatedAt'> & { validation: string; updatedAt: string };

function changeArgs(changes: IntegrationChanges): ChangeArgs {
  return {
    name: changes.name,
    site: changes.site,
    apiKeyLast4: changes.apiKeyLast4,
    applicationKeyLast4: changes.applicationKeyLast4,
    apiKeyEncrypted: changes.apiKeyEncrypted,
    applicationKeyEncrypted: changes.applicationKeyEncrypted,
    validation: JSON.stringify(changes.validation),
    updatedAt: changes.updatedAt.toISOString(),
  };
}

type InsertArgs = ChangeArgs & OwnedArgs & { createdBy: string; type: IntegrationType; createdAt: string };

/** Every query is scoped by the organization that owns the row. */
@Injectable()
export class IntegrationsRepository {
  private readonly db: Dialect;
  private readonly insertIntegration: Statement<InsertArgs>;
  private readonly page: Statement<{ organizationId: string; limit: number; offset: number }>;
  private readonly count: Statement<{ organizationId: string }>;
  private readonly byId: Statement<OwnedArgs>;
  private readonly change: Statement<OwnedArgs & ChangeArgs>;
  private readonly remove: Statement<OwnedArgs>;

  /** notification_integrations as NotificationIntegration describes it. */
  private readonly rows: EntityRows<NotificationIntegration>;

  constructor(@InjectDataSource() private readonly dataSource: DataSource) {
    const db = Dialect.of(dataSource);
    this.db = db;
    this.rows = EntityRows.of(dataSource, NotificationIntegration);
    const COLUMNS = this.rows.columns;
    const owned = sql`id = ${param('id')} AND organization_id = ${param('organizationId')}`;
    this.insertIntegration =
      db.prepare(sql`INSERT INTO notification_integrations (id, organization_id, created_by, type, name, site, api_key_last4,
      application_key_last4, api_key_encrypted, application_key_encrypted, validation, created_at, updated_at)
      VALUES (${param('id')}, ${param('organizationId')}, ${param('createdBy')}, ${param('type')}, ${param('name')},
        ${param('site')}, ${param('apiKeyLast4')}, ${param('applicationKeyLast4')}, ${param('apiKeyEncrypted')},
        ${param('applicationKeyEncrypted')}, ${param('validation')}, ${param('createdAt')}, ${param('updatedAt')})`);
    this.page = db.prepare(sql`SELECT ${raw(COLUMNS)} FROM notification_integrations
      WHERE organization_id = ${param('organizationId')}
      ORDER BY created_at DESC, id DESC LIMIT ${param('limit')} OFFSET ${param('offset')}`);
    this.count = db.prepare(sql`SELECT COUNT(*) AS total_count FROM notification_integrations
      WHERE organization_id = ${param('organizationId')}`);
    this.byId = db.prepare(sql`SELECT ${raw(COLUMNS)} FROM notification_integrations WHERE ${owned}`);
    this.change = db.prepare(sql`UPDATE notification_integrations
      SET name = ${param('name')}, site = ${param('site')}, api_key_last4 = ${param('apiKeyLast4')},
        application_key_last4 = ${param('applicationKeyLast4')}, api_key_encrypted = ${param('apiKeyEncrypted')},
        application_key_encrypted = ${param('applicationKeyEncrypted')}, validation = ${param('validation')},
        updated_at = ${param('updatedAt')}
      WHERE ${owned}`);
    this.remove = db.prepare(sql`DELETE FROM notification_integrations WHERE ${owned}`);
  }

  async insert(integration: NotificationIntegration, tx?: Transaction): Promise<void> {
    await this.db.run(tx ?? this.dataSource.manager, this.insertIntegration, {
      ...changeArgs(integration),
      id: integration.id,
      organizationId: integration.organizationId,
      createdBy: integration.createdBy,
      type: integration.type,
      createdAt: integration.createdAt.toISOString(),
    });
  }

  /** A page of the organization's integrations, newest first, and how many it has. */
  async findPage(organizationId: string, offset: number, limit: number): Promise<[NotificationIntegration[], number]> {
    const rows = await this.db.rows<RawRow, { organizationId: string; limit: number; offset: number }>(this.page, {
      organizationId,
      limit,
      offset,
    });
    const [count] = await this.db.rows<{ total_count: number | string }, { organizationId: string }>(this.count, {
      organizationId,
    });
    return [rows.map(this.rows.toEntity), Number(count.total_count)];
  }

  async findOne(organizationId: string, id: string): Promise<NotificationIntegration | null> {
    const rows = await this.db.rows<RawRow, OwnedArgs>(this.byId, { organizationId, id });
    return rows[0] === undefined ? null : this.rows.toEntity(rows[0]);
  }

  /** False when the row is gone (deleted meanwhile). */
  async update(organizationId: string, id: string, changes: IntegrationChanges, tx?: Transaction): Promise<boolean> {
    const args = { ...changeArgs(changes), organizationId, id };
    return (await this.db.affected(tx ?? this.dataSource.manager, this.change, args)) > 0;
  }

  /** False when there was no such row. */
  async delete(organizationId: string, id: string, tx?: Transaction): Promise<boolean> {
    return (await this.db.affected(tx ?? this.dataSource.manager, this.remove, { organizationId, id })) > 0;
  }
}
