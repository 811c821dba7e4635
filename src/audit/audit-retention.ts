import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { deletePaced, PACED_FIRST_BATCH_SIZE, PACED_MAX_BATCH_SIZE } from '../database/paced-deletes';
import { AuditRepository } from './audit.repository';

export const RETENTION_BATCH_SIZE = PACED_MAX_BATCH_SIZE;
/** The first statement's size, and the least any statement deletes. */
export const RETENTION_FIRST_BATCH_SIZE = PACED_FIRST_BATCH_SIZE;
export const RETENTION_INTERVAL_MS = 60 * 60 * 1000;

const DAY_MS = 24 * 60 * 60 * 1000;

export interface PruneOptions {
  now?: Date;
  maxBatchSize?: number;
  pauseMs?: number;
}

/**
 * Prunes events past AUDIT_RETENTION_DAYS in short, paced statements so pruning takes at most a fifth of the database's
 * time and nothing waits longer than one statement (docs/operations.md#retention).
 */
@Injectable()
export class AuditRetention implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger = new Logger(AuditRetention.name);
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  constructor(
    private readonly events: AuditRepository,
    @InjectConfig() private readonly config: AppConfiguration,
    private readonly adapterHost: HttpAdapterHost,
  ) {}

  /** In the server only: the admin CLI's application context (no HTTP adapter) leaves pruning to it. */
  onApplicationBootstrap(): void {
    if (this.adapterHost.httpAdapter == null) return;
    this.timer = setInterval(() => void this.prune(), RETENTION_INTERVAL_MS);
    this.timer.unref();
    void this.prune();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await this.running;
  }

  get isRunning(): boolean {
    return this.running !== undefined;
  }

  /** Resolves with the count deleted; never rejects (the next run retries). Joins a run in progress. */
  prune(options: PruneOptions = {}): Promise<number> {
    if (this.running !== undefined) return this.running;
    if (this.stopping.signal.aborted) return Promise.resolve(0);
    const run = this.run(options).finally(() => {
      this.running = undefined;
    });
    this.running = run;
    return run;
  }

  private async run({ now = new Date(), maxBatchSize, pauseMs }: PruneOptions): Promise<number> {
    const cutoff = new Date(now.getTime() - this.config.audit.retentionDays * DAY_MS);
    const signal = this.stopping.signal;
    let deleted = 0;
    let statements = 0;
    const deleteBatch = async (size: number): Promise<number> => {
      const count = await this.events.deleteOlderThan(cutoff, size);
      deleted += count;
      statements += 1;
      return count;
    };
    try {
      await deletePaced(deleteBatch, { maxBatchSize, pauseMs, signal });
    } catch (error) {
      this.logger.warn({ err: error, deleted, cutoff }, 'audit retention: pruning failed; the next run tries again');
      return deleted;
    }
    if (deleted > 0) {
      this.logger.log(
        { deleted, statements, cutoff, retentionDays: this.config.audit.retentionDays, stopped: signal.aborted },
        'audit retention: old events deleted',
      );
    }
    return deleted;
  }
}
