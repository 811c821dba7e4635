export interface WaitOptions {
  /** How long the condition may take to hold (default 10 s): past it, the wait fails with what it waited for. */
  timeoutMs?: number;
  /** How often the condition is checked (default every 10 ms). */
  everyMs?: number;
}

/**
 * The one way a test waits: until `condition` holds, that is returns something other than `false`, `undefined` or
 * `null` (which it returns), checked every `everyMs`, for at most `timeoutMs`. A condition that throws ends the wait
 * with its error at once (a process that exited, a wrong answer); one that should be tried again catches its error
 * and returns `undefined`. Past the deadline: "<what>: not after <timeoutMs> ms", with the last value seen.
 *
 * A test never sleeps a fixed time for something it can observe: it waits for it with this. Time-dependent rules
 * (expiry, grace periods) are moved with the clock of test/support/clock.ts instead.
 */
export async function waitFor<T>(
  what: string,
  condition: () => T | false | undefined | null | Promise<T | false | undefined | null>,
  { timeoutMs = 10_000, everyMs = 10 }: WaitOptions = {},
): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await condition();
    if (value !== false && value !== undefined && value !== null) return value;
    if (performance.now() > deadline) {
      const last = value === undefined ? '' : ` (last: ${String(value)})`;
      throw new Error(`${what}: not after ${timeoutMs} ms${last}`);
    }
    await pause(everyMs);
  }
}

/**
 * Like {@link waitFor} for an assertion: until `assertion` stops throwing (an `expect` that does not hold yet, a page
 * element not there yet), tried every `everyMs` (default 100 ms), for at most `timeoutMs` (10 s); past it, the
 * assertion's last error.
 */
export async function untilPasses(
  assertion: () => unknown,
  { timeoutMs = 10_000, everyMs = 100 }: WaitOptions = {},
): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    try {
      await assertion();
      return;
    } catch (error) {
      if (performance.now() > deadline) throw error;
    }
    await pause(everyMs);
  }
}

/**
 * The pace of a loop that measures or drives something over time (a probe every 100 ms, a load of requests), never a
 * wait for something: that is {@link waitFor}.
 */
export function pause(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
