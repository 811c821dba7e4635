import { Injectable } from '@nestjs/common';
import { HttpAdapterHost } from '@nestjs/core';
import { Pace, PacedRunOptions, ScheduledPacedJob } from '../database/scheduled-paced-job';
import { CredentialUsageRepository } from './credential-usage.repository';

/** How long usage over time is kept (docs/api.md#usage-over-time). */
export const USAGE_RETENTION_DAYS = 30;

export type UsagePruneOptions = PacedRunOptions;

/**
 * Deletes the usage counts older than 30 days, hourly and at start, in the server only, in the audit retention's short
 * paced statements (database/scheduled-paced-job.ts, docs/operations.md#retention): the minutes', then the hours'.
 */
@Injectable()
export class CredentialUsageRetention extends ScheduledPacedJob {
  constructor(
    private readonly usage: CredentialUsageRepository,
    adapterHost: HttpAdapterHost,
  ) {
    super(adapterHost, { job: 'usage retention', done: 'old counts deleted' });
  }

  /** Resolves with the rows deleted; never rejects (the next run retries). Joins a run in progress. */
  prune(options: UsagePruneOptions = {}): Promise<number> {
    return this.start(options);
  }

  protected async work(now: Date, pace: Pace): Promise<void> {
    const cutoff = Math.floor(now.getTime() / 60_000) - USAGE_RETENTION_DAYS * 24 * 60;
    for (const table of ['minutes', 'hours'] as const) {
      await pace((size) => this.usage.deleteOlderThan(table, cutoff, size));
    }
  }
}
