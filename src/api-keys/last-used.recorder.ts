import { Injectable, Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { ApiKeysRepository } from './api-keys.repository';

/**
 * `last_used_at` without a write on every exchange (docs/performance.md): uses are collected in
 * memory and written every API_KEY_LAST_USED_FLUSH_MS (default 1 s), and once more at shutdown, by
 * one UPDATE statement per 500 keys (ApiKeysRepository.recordLastUsed) (a thousand clients exchanging every second cost two
 * statements a second, not a thousand). Reads served by this instance see its pending values at
 * once; other instances see them after the next flush. A write never moves the timestamp backwards.
 */
@Injectable()
export class LastUsedRecorder implements OnModuleInit, OnApplicationShutdown {
  private readonly logger = new Logger(LastUsedRecorder.name);
  private pending = new Map<string, Date>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  constructor(
    private readonly keys: ApiKeysRepository,
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

  record(keyId: string, at: Date): void {
    this.pending.set(keyId, at);
  }

  /** The newest use this instance knows of and has not written yet. */
  pendingFor(keyId: string): Date | undefined {
    return this.pending.get(keyId);
  }

  flush(): Promise<void> {
    this.flushing = this.flushing.then(() => this.writePending());
    return this.flushing;
  }

  private async writePending(): Promise<void> {
    if (this.pending.size === 0) return;
    const batch = this.pending;
    this.pending = new Map();
    try {
      await this.keys.recordLastUsed([...batch]);
    } catch (error) {
      // Keep what could not be written for the next round, unless a newer use replaced it.
      for (const [id, at] of batch) if (!this.pending.has(id)) this.pending.set(id, at);
      this.logger.warn({ err: error, keys: batch.size }, 'could not write last_used_at; will retry');
    }
  }
}
