import { Injectable } from '@nestjs/common';
import type { AuditTargetLabels } from '../audit/target-labels';
import { ApiKeysRepository } from './api-keys.repository';

/** audit's AuditTargetLabels port: the labels of keys, shown beside their ids in the audit log. */
@Injectable()
export class ApiKeyLabels implements AuditTargetLabels {
  constructor(private readonly keys: ApiKeysRepository) {}

  labels(organizationId: string, ids: readonly string[]): Promise<Map<string, string>> {
    return this.keys.findLabels(organizationId, ids);
  }
}
