import { setTimeout as sleep } from 'node:timers/promises';
import { Injectable, Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { AuditRepository } from './audit.repository';

/** Events one DELETE statement removes at most. */
export const RETENTION_BATCH_SIZE = 1000;
/** Pause between two batches: other writers (and, on SQLite, the event loop) get their turn. */
export const RETENTION_PAUSE_MS = 100;
/** How often a run starts (besides one at start). */
export const RETENTION_INTERVAL_MS = 60 * 60 * 1000;

const DAY_MS = 24 * 60 * 60 * 1000;

export interface PruneOptions {
  /** The clock (tests); default now. */
  now?: Date;
  batchSize?: number;
  pauseMs?: number;
}

/**
 * Keeps the audit trail to AUDIT_RETENTION_DAYS (docs/operations.md#retention): at start and every
 * hour, deletes the events older than that, oldest first, RETENTION_BATCH_SIZE per statement with
 * RETENTION_PAUSE_MS between statements, until none is left. No statement holds a lock for long: on
 * PostgreSQL writers never wait (new events are other rows) and several instances pruning at once
 * delete different rows (SKIP LOCKED); on SQLite each statement is one short write transaction.
 * A run in progress stops after its current statement when the application closes.
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
  ) {}

  onApplicationBootstrap(): void {
    this.timer = setInterval(() => void this.prune(), RETENTION_INTERVAL_MS);
    this.timer.unref();
    void this.prune();
  }

  /** Before the database closes (TypeORM closes it at application shutdown). */
  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await this.running;
  }

  /** Whether a run is in progress. */
  get isRunning(): boolean {
    return this.running !== undefined;
  }

  /**
   * One run: resolves with the number of events it deleted (never rejects: a failure is logged
   * and the next run tries again). While a run is in progress, the same run.
   */
  prune(options: PruneOptions = {}): Promise<number> {
    if (this.running !== undefined) return this.running;
    if (this.stopping.signal.aborted) return Promise.resolve(0);
    const run = this.run(options).finally(() => {
      this.running = undefined;
    });
    this.running = run;
    return run;
  }

  private async run({
    now = new Date(),
    batchSize = RETENTION_BATCH_SIZE,
    pauseMs = RETENTION_PAUSE_MS,
  }: PruneOptions): Promise<number> {
    const cutoff = new Date(now.getTime() - this.config.audit.retentionDays * DAY_MS);
    const signal = this.stopping.signal;
    let deleted = 0;
    try {
      while (!signal.aborted) {
        const count = await this.events.deleteOlderThan(cutoff, batchSize);
        deleted += count;
        if (count < batchSize) break;
        await sleep(pauseMs, undefined, { signal }).catch(() => undefined);
      }
    } catch (error) {
      this.logger.warn({ err: error, deleted, cutoff }, 'audit retention: pruning failed; the next run tries again');
      return deleted;
    }
    if (deleted > 0) {
      this.logger.log(
        { deleted, cutoff, retentionDays: this.config.audit.retentionDays, stopped: signal.aborted },
        'audit retention: old events deleted',
      );
    }
    return deleted;
  }
}
