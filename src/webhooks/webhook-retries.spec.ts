import {
  FIRST_RETRY_MS,
  MAX_ATTEMPTS,
  MAX_RETRY_MS,
  nextAttemptAt,
  RETRY_WINDOW_MS,
  retryDelayMs,
} from './webhook-retries';

describe('webhook retry schedule', () => {
  it('doubles from 10 s to 2 h, each wait between half and all of it', () => {
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, () => 1))).toEqual([10_000, 20_000, 40_000, 80_000]);
    expect([1, 2, 3, 4].map((n) => retryDelayMs(n, () => 0))).toEqual([5_000, 10_000, 20_000, 40_000]);
    expect(retryDelayMs(30, () => 1)).toBe(MAX_RETRY_MS);
    expect(retryDelayMs(1000, () => 0)).toBe(MAX_RETRY_MS / 2);
  });

  it('gives up past 24 hours from the event, after about two dozen attempts', () => {
    const created = new Date(0);
    expect(nextAttemptAt(created, created, 1, () => 0.5)).toEqual(new Date(FIRST_RETRY_MS * 0.75));
    expect(nextAttemptAt(created, new Date(RETRY_WINDOW_MS - 1000), 20, () => 0)).toBeNull();
    let at = created;
    let attempts = 0;
    for (;;) {
      attempts += 1;
      const next = nextAttemptAt(created, at, attempts, () => 0.5);
      if (next === null) break;
      at = next;
    }
    expect(at.getTime()).toBeLessThanOrEqual(RETRY_WINDOW_MS);
    expect(at.getTime()).toBeGreaterThan(RETRY_WINDOW_MS - MAX_RETRY_MS);
    expect(attempts).toBeGreaterThan(15);
    expect(attempts).toBeLessThanOrEqual(MAX_ATTEMPTS);
  });

  it('never more than 25 attempts, even when every wait is the shortest the jitter allows', () => {
    const created = new Date(0);
    let at = created;
    let attempts = 0;
    for (;;) {
      attempts += 1;
      const next = nextAttemptAt(created, at, attempts, () => 0);
      if (next === null) break;
      at = next;
    }
    expect(attempts).toBe(MAX_ATTEMPTS);
    expect(at.getTime()).toBeLessThan(RETRY_WINDOW_MS);
  });
});
