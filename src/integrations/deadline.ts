/** A validation ran out of time (docs/integrations.md#limits). */
export class DeadlineExceededError extends Error {
  constructor(readonly afterMs: number) {
    super(`validation deadline of ${afterMs} ms exceeded`);
    this.name = 'DeadlineExceededError';
  }
}

/** The overall time budget of one validation. */
export class Deadline {
  private readonly controller = new AbortController();
  private readonly timer: NodeJS.Timeout;
  private readonly endsAt: number;

  constructor(
    readonly ms: number,
    private readonly now: () => number = Date.now,
  ) {
    this.endsAt = now() + ms;
    this.timer = setTimeout(() => this.controller.abort(new DeadlineExceededError(ms)), ms);
  }

  get signal(): AbortSignal {
    return this.controller.signal;
  }

  remainingMs(): number {
    return Math.max(0, this.endsAt - this.now());
  }

  /** `work`, or a DeadlineExceededError as soon as the deadline passes, whichever comes first. */
  race<T>(work: Promise<T>): Promise<T> {
    const signal = this.signal;
    if (signal.aborted) return Promise.reject(signal.reason as Error);
    return new Promise<T>((resolve, reject) => {
      const onAbort = (): void => reject(signal.reason as Error);
      signal.addEventListener('abort', onAbort, { once: true });
      void work.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
    });
  }

  clear(): void {
    clearTimeout(this.timer);
  }
}
