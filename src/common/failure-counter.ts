/**
 * Fixed-window failure counters, the storage behind TokenAttemptLimiter. A window opens at a key's
 * first failure and lasts `windowMs`; its count is the failures seen since. `increment` mirrors
 * @nestjs/throttler's `ThrottlerStorage.increment`; `peek` is the read that interface lacks and that
 * refusing a limited client before checking its credentials needs (which is also why we do not use
 * that package: its guard counts every request, not failures).
 */
export interface FailureWindow {
  count: number;
  /** Time until the window closes and the count starts again from zero (0 when there is none). */
  resetsInMs: number;
}

export interface FailureCounter {
  /** The current windows of these keys, without counting anything. */
  peek(keys: readonly string[]): Promise<FailureWindow[]>;
  /** Counts one failure for `key`, opening a window of `windowMs` if none is open. */
  increment(key: string, windowMs: number): Promise<FailureWindow>;
  close(): Promise<void>;
}

export const FAILURE_COUNTER = Symbol('FAILURE_COUNTER');

const EMPTY: FailureWindow = { count: 0, resetsInMs: 0 };

/** One process's counters: the default without REDIS_URL, and the fallback while Redis is down. */
export class MemoryFailureCounter implements FailureCounter {
  private readonly windows = new Map<string, { count: number; closesAt: number }>();
  private readonly sweeper: NodeJS.Timeout;

  constructor(
    sweepEveryMs = 60_000,
    private readonly now: () => number = Date.now,
  ) {
    // Closed windows of addresses that never come back would otherwise stay for good.
    this.sweeper = setInterval(() => this.sweep(), sweepEveryMs);
    this.sweeper.unref();
  }

  peek(keys: readonly string[]): Promise<FailureWindow[]> {
    const now = this.now();
    return Promise.resolve(
      keys.map((key) => {
        const window = this.windows.get(key);
        return window === undefined || window.closesAt <= now
          ? EMPTY
          : { count: window.count, resetsInMs: window.closesAt - now };
      }),
    );
  }

  increment(key: string, windowMs: number): Promise<FailureWindow> {
    const now = this.now();
    let window = this.windows.get(key);
    if (window === undefined || window.closesAt <= now) {
      window = { count: 0, closesAt: now + windowMs };
      this.windows.set(key, window);
    }
    window.count += 1;
    return Promise.resolve({ count: window.count, resetsInMs: window.closesAt - now });
  }

  close(): Promise<void> {
    clearInterval(this.sweeper);
    return Promise.resolve();
  }

  sweep(): void {
    const now = this.now();
    for (const [key, window] of this.windows) if (window.closesAt <= now) this.windows.delete(key);
  }

  get size(): number {
    return this.windows.size;
  }
}
