import { Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';

/**
 * Writes that the hot paths never wait for: entries kept in memory by id and written every `flushMs` and at shutdown,
 * one batch at a time, in the statements the subclass's `write` makes. A batch that could not be written is handed
 * back to `restore` for the next round; a crash loses what was pending (at most `flushMs` of uses). The usage fields
 * (UsageRecorder) and usage over time (credentials/credential-usage.counter.ts) are two.
 */
export abstract class BatchedWrites<E> implements OnModuleInit, OnApplicationShutdown {
  protected readonly logger: Logger;
  protected pending = new Map<string, E>();
  /** The batch being written, until its statements have committed. */
  protected writing = new Map<string, E>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  protected constructor(
    name: string,
    private readonly flushMs: number,
    /** What the warning of a failed write calls the entries. */
    private readonly what: string,
  ) {
    this.logger = new Logger(name);
  }

  /** Writes one batch of (id, entry) pairs: all of it, or fails. */
  protected abstract write(batch: Array<[string, E]>): Promise<void>;

  /** Puts an entry of a batch that failed back among the pending ones, with what has come since. */
  protected abstract restore(id: string, entry: E): void;

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
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
      await this.write([...batch]);
    } catch (error) {
      // Kept for the next round.
      for (const [id, entry] of batch) this.restore(id, entry);
      this.logger.warn({ err: error, credentials: batch.size }, `could not write the ${this.what}; will retry`);
    } finally {
      this.writing = new Map();
    }
  }
}

/** One use of a credential: when, and whatever else its usage fields keep. */
export interface Use {
  at: Date;
}

/**
 * Usage fields without a write per use (docs/api.md#usage-fields): the newest use of each credential is kept in memory
 * and written in batches (BatchedWrites).
 */
export abstract class UsageRecorder<U extends Use> extends BatchedWrites<U> {
  protected constructor(name: string, flushMs: number) {
    super(name, flushMs, 'usage fields');
  }

  /** Keeps `use` unless a later use of the same credential is pending already. */
  record(id: string, use: U): void {
    const known = this.pending.get(id);
    if (known === undefined || known.at.getTime() <= use.at.getTime()) this.pending.set(id, use);
  }

  /** A use that could not be written: kept unless a later one replaced it. */
  protected restore(id: string, use: U): void {
    this.record(id, use);
  }

  /** This instance's use of `id` not written yet, or undefined. */
  protected pendingUse(id: string): U | undefined {
    return this.pending.get(id) ?? this.writing.get(id);
  }
}
