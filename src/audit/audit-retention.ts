import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { InjectConfig } from '../config/config.module';
import type { AppConfiguration } from '../config/configuration';
import { PACED_FIRST_BATCH_SIZE, PACED_MAX_BATCH_SIZE } from '../database/paced-deletes';
import { Pace, PacedRun, PacedRunOptions, ScheduledPacedJob } from '../database/scheduled-paced-job';
import { AuditRepository } from './audit.repository';

export const RETENTION_BATCH_SIZE = PACED_MAX_BATCH_SIZE;
/** The first statement's size, and the least any statement deletes. */
export const RETENTION_FIRST_BATCH_SIZE = PACED_FIRST_BATCH_SIZE;

const DAY_MS = 24 * 60 * 60 * 1000;

export type PruneOptions = PacedRunOptions;

/**
 * Prunes events past AUDIT_RETENTION_DAYS in short, paced statements so pruning takes at most a fifth of the database's
 * time and nothing waits longer than one statement (docs/operations.md#retention).
 */
@Injectable()
export class AuditRetention extends ScheduledPacedJob {
  constructor(
    private readonly events: AuditRepository,
    @InjectConfig() private readonly config: AppConfiguration,
    adapterHost: HttpAdapterHost,
  ) {
    super(adapterHost, { job: 'audit retention', done: 'old events deleted' });
  }

  /** Resolves with the count deleted; never rejects (the next run retries). Joins a run in progress. */
  prune(options: PruneOptions = {}): Promise<number> {
    return this.start(options);
  }

  protected async work(now: Date, pace: Pace, run: PacedRun): Promise<void> {
    const cutoff = new Date(now.getTime() - this.config.audit.retentionDays * DAY_MS);
    Object.assign(run, { cutoff, retentionDays: this.config.audit.retentionDays });
    await pace((size) => this.events.deleteOlderThan(cutoff, size));
  }
}
