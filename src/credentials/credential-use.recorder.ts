import { Injectable } from '@nestjs/common';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { UsageRecorder } from '../database/usage-recorder';
import type { Credential, CredentialBase } from './credential.entity';
import type { CredentialUse } from './credential-kind';

/**
 * The usage fields of every kind without a write per use: written every API_KEY_LAST_USED_FLUSH_MS and at shutdown,
 * one statement per kind and 500 credentials (docs/adr/0004-authorization-read-on-every-request.md).
 */
@Injectable()
export class CredentialUseRecorder extends UsageRecorder<CredentialUse> {
  constructor(@InjectConfig() config: AppConfiguration) {
    super(CredentialUseRecorder.name, config.apiKeys.lastUsedFlushMs);
  }

  /** The credential with this instance's pending use in its usage fields, when it is later than the stored one. */
  withPendingUse<T extends Credential & { lastUsedUserAgent?: string | null }>(credential: T): T {
    const pending = this.pendingUse(credential.id);
    if (pending !== undefined && (credential.lastUsedAt === null || credential.lastUsedAt < pending.at)) {
      credential.lastUsedAt = pending.at;
      credential.lastUsedIp = pending.ip;
      if (pending.store.kind.keepsUserAgent) credential.lastUsedUserAgent = pending.userAgent;
    }
    return credential;
  }

  /** A kind whose usage is last_used_at alone (an MCP grant): its pending use's time, when later than the stored one. */
  withPendingTime<T extends CredentialBase>(credential: T): T {
    const pending = this.pendingUse(credential.id);
    if (pending !== undefined && (credential.lastUsedAt === null || credential.lastUsedAt < pending.at)) {
      credential.lastUsedAt = pending.at;
    }
    return credential;
  }

  protected async write(batch: Array<[string, CredentialUse]>): Promise<void> {
    const byStore = new Map<CredentialUse['store'], Array<[string, CredentialUse]>>();
    for (const entry of batch) {
      const uses = byStore.get(entry[1].store);
      if (uses === undefined) byStore.set(entry[1].store, [entry]);
      else uses.push(entry);
    }
    for (const [store, uses] of byStore) await store.recordLastUsed(uses);
  }
}
