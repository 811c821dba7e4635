import { SET_UP_TIMEOUT_MS } from './timeouts';

/**
 * What a test file starts that must not outlive it: applications (test-app.ts) and CLI contexts (cli.ts). A suite
 * closes them in `afterAll`; what it could not close (its `beforeAll` timed out while an application was still
 * booting, or failed before it kept what it started) the test environment closes after the file's last hook, before
 * Jest tears the file's modules down (test/support/environment.ts calls {@link CLOSE_LEFTOVERS}).
 */

/** Where this file's registry hangs on the test file's global, for the environment (outside the file's modules). */
export const CLOSE_LEFTOVERS = Symbol.for('gatehouse.test.closeLeftovers');

/** Starts not settled yet. */
const starting = new Set<Promise<unknown>>();
/** Started and not closed: how to close each. */
const open = new Map<object, () => Promise<void>>();

/**
 * `start` as it resolves, kept until {@link closed} is called with what it resolved to; `close` closes it if the file
 * ends first.
 */
export async function keepUntilClosed<T extends object>(start: Promise<T>, close: (started: T) => Promise<void>) {
  starting.add(start);
  try {
    const started = await start;
    open.set(started, () => close(started));
    return started;
  } finally {
    starting.delete(start);
  }
}

/** `started` was closed by its suite. */
export function closed(started: object): void {
  open.delete(started);
}

/** Waits for what is still starting (at most SET_UP_TIMEOUT_MS), then closes whatever is open, the newest first. */
async function closeLeftovers(): Promise<void> {
  if (starting.size > 0) {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      Promise.allSettled([...starting]),
      new Promise((resolve) => (timer = setTimeout(resolve, SET_UP_TIMEOUT_MS))),
    ]);
    clearTimeout(timer);
  }
  const closers = [...open.values()].reverse();
  open.clear();
  for (const close of closers) await close().catch(() => undefined);
}

(globalThis as Record<symbol, unknown>)[CLOSE_LEFTOVERS] = closeLeftovers;
