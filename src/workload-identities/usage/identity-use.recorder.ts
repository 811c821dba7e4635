import { Injectable } from '@nestjs/common';
import { InjectConfig } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import { UsageRecorder } from '../../database/usage-recorder';
import type { WorkloadIdentity } from '../workload-identity.entity';
import { IdentityUsageRepository, IdentityUse } from './identity-usage.repository';

/** The identities' usage fields without a write per exchange, as the keys' (every API_KEY_LAST_USED_FLUSH_MS). */
@Injectable()
export class IdentityUseRecorder extends UsageRecorder<IdentityUse> {
  constructor(
    private readonly usage: IdentityUsageRepository,
    @InjectConfig() config: AppConfiguration,
  ) {
    super(IdentityUseRecorder.name, config.apiKeys.lastUsedFlushMs);
  }

  /** The identity with this instance's pending use in its usage fields, when it is later than the stored one. */
  withPendingUse(identity: WorkloadIdentity): WorkloadIdentity {
    const pending = this.pendingUse(identity.id);
    if (pending !== undefined && (identity.lastUsedAt === null || identity.lastUsedAt < pending.at)) {
      identity.lastUsedAt = pending.at;
      identity.lastUsedIp = pending.ip;
    }
    return identity;
  }

  protected write(batch: Array<[string, IdentityUse]>): Promise<void> {
    return this.usage.recordLastUsed(batch);
  }
}
