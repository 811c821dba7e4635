import { Injectable } from '@nestjs/common';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { UsageRecorder } from '../database/usage-recorder';
import type { Credential } from './credential.entity';
import type { CredentialsRepository } from './credentials.repository';

/**
 * One successful use of a credential, as its usage fields keep it (docs/api.md#usage-fields): `last_used_at`,
 * `last_used_ip` and, for a kind that keeps it, `last_used_user_agent` always come from the same use.
 */
export interface CredentialUse {
  at: Date;
  /** The client address as the failure limiter sees it (common/client-address.ts); null when unknown. */
  ip: string | null;
  /** The request's User-Agent as usageUserAgent cleans it; null when it had none or the kind keeps none. */
  userAgent: string | null;
  /** The kind's table it is written to. */
  store: CredentialsRepository<Credential>;
}

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
