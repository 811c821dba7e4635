import { Logger, OnApplicationShutdown, OnModuleInit } from '@nestjs/common';

/** One use of a credential: when, and whatever else its usage fields keep. */
export interface Use {
  at: Date;
}

/**
 * Usage fields without a write per use (docs/api.md#usage-fields): the newest use of each credential is kept in memory
 * and written every `flushMs` and at shutdown, in the batches the subclass's `write` makes. API keys and workload
 * identities each have one (their tables and fields differ).
 */
export abstract class UsageRecorder<U extends Use> implements OnModuleInit, OnApplicationShutdown {
  private readonly logger: Logger;
  private pending = new Map<string, U>();
  /** The batch being written: still shown by pendingUse until its UPDATE has committed. */
  private writing = new Map<string, U>();
  private timer: NodeJS.Timeout | undefined;
  private flushing: Promise<void> = Promise.resolve();

  protected constructor(
    name: string,
    private readonly flushMs: number,
  ) {
    this.logger = new Logger(name);
  }

  /** Writes one batch of (id, newest use) pairs. */
  protected abstract write(batch: Array<[string, U]>): Promise<void>;

  onModuleInit(): void {
    this.timer = setInterval(() => void this.flush(), this.flushMs);
    this.timer.unref();
  }

  async onApplicationShutdown(): Promise<void> {
    clearInterval(this.timer);
    await this.flush();
  }

  /** Keeps `use` unless a later use of the same credential is pending already. */
  record(id: string, use: U): void {
    const known = this.pending.get(id);
    if (known === undefined || known.at.getTime() <= use.at.getTime()) this.pending.set(id, use);
  }

  /** This instance's use of `id` not written yet, or undefined. */
  protected pendingUse(id: string): U | undefined {
    return this.pending.get(id) ?? this.writing.get(id);
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
      // Keep what could not be written for the next round, unless a later use replaced it.
      for (const [id, use] of batch) this.record(id, use);
      this.logger.warn({ err: error, credentials: batch.size }, 'could not write the usage fields; will retry');
    } finally {
      this.writing = new Map();
    }
  }
}
