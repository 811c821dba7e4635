import { Logger, OnApplicationBootstrap, OnModuleDestroy } from '@nestjs/common';
import type { HttpAdapterHost } from '@nestjs/core';
import { deletePaced } from './paced-deletes';

/** How often a job runs after the run at start. */
export const SCHEDULED_JOB_INTERVAL_MS = 60 * 60 * 1000;

/** A run's instant (its cutoffs are reckoned from it) and, for tests, its statements' bounds. */
export interface PacedRunOptions {
  now?: Date;
  maxBatchSize?: number;
  pauseMs?: number;
}

/** What a run did so far, in its log line (on failure too): `deleted` is what the run resolves with. */
export interface PacedRun {
  deleted: number;
  statements: number;
  [detail: string]: unknown;
}

/** Runs `deleteBatch` (how many it deleted of `size`) in paced statements until one finds fewer; counted in the run. */
export type Pace = (deleteBatch: (size: number) => Promise<number>) => Promise<void>;

/**
 * A job of short, paced deletions (paced-deletes.ts, docs/operations.md#retention) run at start and every hour, in the
 * server only (the admin CLI's application context has no HTTP adapter and leaves it to the server): one run at a time,
 * a call during a run joining it; shutdown stops it after its statement and waits for it; a failure is logged, and the
 * next run tries again. A subclass says what one run deletes (`work`).
 */
export abstract class ScheduledPacedJob implements OnApplicationBootstrap, OnModuleDestroy {
  private readonly logger: Logger;
  private readonly stopping = new AbortController();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<number> | undefined;

  protected constructor(
    private readonly adapterHost: HttpAdapterHost,
    /** How its log lines start (`audit retention`) and what they say a run did (`old events deleted`). */
    private readonly wording: { job: string; done: string },
    /** Each statement's most rows, unless a run says otherwise. */
    private readonly maxBatchSize?: number,
  ) {
    this.logger = new Logger(new.target.name);
  }

  onApplicationBootstrap(): void {
    if (this.adapterHost.httpAdapter == null) return;
    this.timer = setInterval(() => void this.start(), SCHEDULED_JOB_INTERVAL_MS);
    this.timer.unref();
    void this.start();
  }

  async onModuleDestroy(): Promise<void> {
    clearInterval(this.timer);
    this.stopping.abort();
    await this.running;
  }

  get isRunning(): boolean {
    return this.running !== undefined;
  }

  /** One run: resolves with how many rows it deleted; never rejects. Joins a run in progress; none after shutdown. */
  protected start(options: PacedRunOptions = {}): Promise<number> {
    if (this.running !== undefined) return this.running;
    if (this.stopping.signal.aborted) return Promise.resolve(0);
    const run = this.run(options).finally(() => {
      this.running = undefined;
    });
    this.running = run;
    return run;
  }

  /** What one run deletes, reckoned from `now`: each kind of row through `pace`; details for the log go in `run`. */
  protected abstract work(now: Date, pace: Pace, run: PacedRun): Promise<void>;

  private async run({ now = new Date(), maxBatchSize = this.maxBatchSize, pauseMs }: PacedRunOptions): Promise<number> {
    const signal = this.stopping.signal;
    const run: PacedRun = { deleted: 0, statements: 0 };
    const pace: Pace = (deleteBatch) =>
      deletePaced(
        async (size) => {
          const count = await deleteBatch(size);
          run.deleted += count;
          run.statements += 1;
          return count;
        },
        { maxBatchSize, pauseMs, signal },
      );
    try {
      await this.work(now, pace, run);
    } catch (error) {
      this.logger.warn({ err: error, ...run }, `${this.wording.job} failed; the next run tries again`);
      return run.deleted;
    }
    if (run.deleted > 0)
      this.logger.log({ ...run, stopped: signal.aborted }, `${this.wording.job}: ${this.wording.done}`);
    return run.deleted;
  }
}
