import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectConfig } from '../../config/config.module';
import type { AppConfiguration } from '../../config/configuration';
import type { ApiKey } from '../api-key.entity';
import { KeyUsageRepository } from './key-usage.repository';
import type { KeyUse } from './key-use';

/**
 * The usage fields without a write per exchange: the newest use of each key is kept in memory and written every
 * API_KEY_LAST_USED_FLUSH_MS and at shutdown, 500 keys a statement (docs/api.md#usage-fields, docs/adr/0004-authorization-read-on-every-request.md).
 */
@Injectable()
export class LastUsedRecorder implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(LastUsedRecorder.name);
  private pending = new Map<string, KeyUse>();
  /** The batch being written: still shown by withPendingUse until its UPDATE has committed. */
  private writing = new Map<string, KeyUse>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly keys: KeyUsageRepository,
    @InjectConfig() private readonly config: AppConfiguration,
  ) {}

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.config.apiKeys.lastUsedFlushMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  /** Keeps `use` unless a later use of the key is pending already. */
  record(keyId: string, use: KeyUse): void {
    const known = this.pending.get(keyId);
    if (known === undefined || known.at.getTime() <= use.at.getTime()) this.pending.set(keyId, use);
  }

  /** The key with this instance's pending use in its usage fields, when it is later than the stored one. */
  withPendingUse(key: ApiKey): ApiKey {
    const pending = this.pending.get(key.id) ?? this.writing.get(key.id);
    if (pending !== undefined && (key.lastUsedAt === null || key.lastUsedAt < pending.at)) {
      key.lastUsedAt = pending.at;
      key.lastUsedIp = pending.ip;
      key.lastUsedUserAgent = pending.userAgent;
    }
    return key;
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writePending());
    return this.flushing;
  }

  private async writePending(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    this.writing = batch;
    try {
      await this.keys.recordLastUsed([...batch]);
    } catch (error) {
      // Keep what could not be written for the next round, unless a later use replaced it.
      for (const [id, use] of batch) this.record(id, use);
      this.logger.warn({ err: error, keys: batch.size }, 'could not write the usage fields; will retry');
    } finally {
      this.writing = new Map();
    }
  }
}
