import { Injectable } from '@nestjs/common';
import { InjectConfig } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import { UsageRecorder } from '../../database/usage-recorder';
import type { ApiKey } from '../api-key.entity';
import { KeyUsageRepository } from './key-usage.repository';
import type { KeyUse } from './key-use';

/**
 * The keys' usage fields without a write per exchange: written every API_KEY_LAST_USED_FLUSH_MS and at shutdown, 500
 * keys a statement (docs/api.md#usage-fields, docs/adr/0004-authorization-read-on-every-request.md).
 */
@Injectable()
export class LastUsedRecorder extends UsageRecorder<KeyUse> {
  constructor(
    private readonly keys: KeyUsageRepository,
    @InjectConfig() config: AppConfiguration,
  ) {
    super(LastUsedRecorder.name, config.apiKeys.lastUsedFlushMs);
  }

  /** The key with this instance's pending use in its usage fields, when it is later than the stored one. */
  withPendingUse(key: ApiKey): ApiKey {
    const pending = this.pendingUse(key.id);
    if (pending !== undefined && (key.lastUsedAt === null || key.lastUsedAt < pending.at)) {
      key.lastUsedAt = pending.at;
      key.lastUsedIp = pending.ip;
      key.lastUsedUserAgent = pending.userAgent;
    }
    return key;
  }

  protected write(batch: Array<[string, KeyUse]>): Promise<void> {
    return this.keys.recordLastUsed(batch);
  }
}
