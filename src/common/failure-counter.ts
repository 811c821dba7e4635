/**
 * Fixed-window counters behind TokenAttemptLimiter (docs/operations.md#abuse-limits-on-post-v1token) and the other
 * limits: the failure limits, and the per-key rate limits (auth/key-request-limiter.ts).
 */
export interface FailureSlot {
  granted: boolean;
  resetsInMs: number;
  /** Slots left in the window once this one is taken (0 when refused). */
  remaining: number;
  /** For an attempt that did not fail; once. Neither waits nor throws. */
  release(): void;
}

export interface FailureCounter {
  reserve(key: string, limit: number, windowMs: number): Promise<FailureSlot>;
  close(): Promise<void>;
}

export const FAILURE_COUNTER = Symbol('FAILURE_COUNTER');

const NOTHING = (): void => undefined;

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

  /** Synchronous, so concurrent attempts never both get the last slot. */
  reserve(key: string, limit: number, windowMs: number): Promise<FailureSlot> {
    const now = this.now();
    let window = this.windows.get(key);
    if (window === undefined || window.closesAt <= now) {
      window = { count: 0, closesAt: now + windowMs };
      this.windows.set(key, window);
    }
    const resetsInMs = window.closesAt - now;
    if (window.count >= limit) return Promise.resolve({ granted: false, resetsInMs, remaining: 0, release: NOTHING });
    window.count += 1;
    const remaining = limit - window.count;
    const taken = window;
    let released = false;
    const release = (): void => {
      // Once, and only into the window the slot was taken from: a later window's count is not ours to lower.
      if (released || this.windows.get(key) !== taken) return;
      released = true;
      taken.count -= 1;
      if (taken.count <= 0) this.windows.delete(key);
    };
    return Promise.resolve({ granted: true, resetsInMs, remaining, release });
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
