import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Transaction } from '../database/unit-of-work';
import { NotificationIntegration } from './integration.entity';

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

/** Every query is scoped by the organization that owns the row. */
@Injectable()
export class IntegrationsRepository {
  constructor(
    @InjectRepository(NotificationIntegration) private readonly integrations: Repository<NotificationIntegration>,
  ) {}

  async insert(integration: NotificationIntegration, tx?: Transaction): Promise<void> {
    await this.on(tx).insert(integration);
  }

  findPage(organizationId: string, offset: number, limit: number): Promise<[NotificationIntegration[], number]> {
    return this.integrations
      .createQueryBuilder('i')
      .where('i.organization_id = :organizationId', { organizationId })
      .orderBy('i.created_at', 'DESC')
      .addOrderBy('i.id', 'DESC')
      .skip(offset)
      .take(limit)
      .getManyAndCount();
  }

  findOne(organizationId: string, id: string): Promise<NotificationIntegration | null> {
    return this.integrations.findOneBy({ id, organizationId });
  }

  /** False when the row is gone (deleted meanwhile). */
  async update(organizationId: string, id: string, changes: IntegrationChanges, tx?: Transaction): Promise<boolean> {
    const result = await this.on(tx).update({ id, organizationId }, changes);
    return (result.affected ?? 0) > 0;
  }

  /** False when there was no such row. */
  async delete(organizationId: string, id: string, tx?: Transaction): Promise<boolean> {
    const result = await this.on(tx).delete({ id, organizationId });
    return (result.affected ?? 0) > 0;
  }

  private on(tx: Transaction | undefined): Repository<NotificationIntegration> {
    return tx?.getRepository(NotificationIntegration) ?? this.integrations;
  }
}
