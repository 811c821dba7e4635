import { Injectable } from '@nestjs/common';
import { InjectRepository } from '@nestjs/typeorm';
import { Repository } from 'typeorm';
import type { Transaction } from '../database/unit-of-work';
import { AuditEvent } from './audit-event.entity';

/** Every query on audit_events; TypeORM's entity metadata maps the rows. */
@Injectable()
export class AuditRepository {
  constructor(@InjectRepository(AuditEvent) private readonly events: Repository<AuditEvent>) {}

  /** Inside `tx` when given: the entry is stored with the change it records, or not at all. */
  async insert(event: AuditEvent, tx?: Transaction): Promise<void> {
    await (tx?.getRepository(AuditEvent) ?? this.events).insert(event);
  }

  /** Newest first (occurred_at, then id); every organization's when `organizationId` is null. */
  findNewest(organizationId: string | null, limit: number): Promise<AuditEvent[]> {
    const query = this.events
      .createQueryBuilder('e')
      .orderBy('e.occurred_at', 'DESC')
      .addOrderBy('e.id', 'DESC')
      .take(limit);
    if (organizationId !== null) query.where('e.organization_id = :organizationId', { organizationId });
    return query.getMany();
  }
}
