import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { deletePaced } from '../database/paced-deletes';
import { CredentialUsageRepository } from './credential-usage.repository';

/** How long usage over time is kept (docs/api.md#usage-over-time). */
export const USAGE_RETENTION_DAYS = 30;
const RUN_EVERY_MS = 60 * 60 * 1000;

export interface UsagePruneOptions {
  now?: Date;
  maxBatchSize?: number;
  pauseMs?: number;
}

/**
 * Deletes the usage counts older than 30 days, hourly and at start, in the server only, in the audit retention's short
 * paced statements (database/paced-deletes.ts, docs/operations.md#retention): the minutes', then the hours'.
 */
@Injectable()
export class CredentialUsageRetention implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(CredentialUsageRetention.name);
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly usage: CredentialUsageRepository,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** The admin CLI's application context (no HTTP adapter) leaves pruning to the server. */
  onApplicationBootstrap(): void {
    if (this.adapterHost.httpAdapter == null) return;
    this.timer = setInterval(() => void this.prune(), RUN_EVERY_MS);
    this.timer.unref();
    void this.prune();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await this.running;
  }

  /** Resolves with the rows deleted; never rejects (the next run retries). Joins a run in progress. */
  prune(options: UsagePruneOptions = {}): Promise<number> {
    if (this.running !== undefined) return this.running;
    if (this.stopping.signal.aborted) return Promise.resolve(0);
    const run = this.run(options).finally(() => {
      this.running = undefined;
    });
    this.running = run;
    return run;
  }

  private async run({ now = new Date(), maxBatchSize, pauseMs }: UsagePruneOptions): Promise<number> {
    const cutoff = Math.floor(now.getTime() / 60_000) - USAGE_RETENTION_DAYS * 24 * 60;
    const signal = this.stopping.signal;
    let deleted = 0;
    try {
      for (const table of ['minutes', 'hours'] as const) {
        const deleteBatch = async (size: number): Promise<number> => {
          const count = await this.usage.deleteOlderThan(table, cutoff, size);
          deleted += count;
          return count;
        };
        await deletePaced(deleteBatch, { maxBatchSize, pauseMs, signal });
      }
    } catch (error) {
      this.logger.warn({ err: error, deleted }, 'usage retention: pruning failed; the next run tries again');
      return deleted;
    }
    if (deleted > 0) this.logger.log({ deleted, stopped: signal.aborted }, 'usage retention: old counts deleted');
    return deleted;
  }
}
