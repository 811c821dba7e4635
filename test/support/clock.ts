import { waitFor } from './wait';

/**
 * The service's clock (Date) frozen at an instant, every timer left real: requests, the database
 * drivers and the signing thread run as usual, and every `Date.now()` of the service returns the
 * instant until it is moved with `jest.setSystemTime`. For rules that compare with "now" to the
 * millisecond (key expiry, token lifetimes) without waiting. Undo with `jest.useRealTimers()`.
 */
export function freezeDate(at: number): void {
  jest.useFakeTimers({
    now: at,
    doNotFake: [
      'hrtime',
      'nextTick',
      'performance',
      'queueMicrotask',
      'requestAnimationFrame',
      'cancelAnimationFrame',
      'requestIdleCallback',
      'cancelIdleCallback',
      'setImmediate',
      'clearImmediate',
      'setInterval',
      'clearInterval',
      'setTimeout',
      'clearTimeout',
    ],
  });
}

/** A whole second a little ahead of the real clock: tokens count whole seconds from it. */
export function nextWholeSecond(): number {
  return (Math.floor(Date.now() / 1000) + 1) * 1000;
}

/**
 * Resolves once the service's clock reads `ms` milliseconds later than now: for rules that order or compare by time to
 * the millisecond (created_at, updated_at). A frozen clock ({@link freezeDate}) is moved; the real one is waited for.
 */
export async function clockAdvance(ms: number): Promise<void> {
  const target = Date.now() + ms;
  if (isFrozen()) {
    jest.setSystemTime(target);
    return;
  }
  await waitFor(`the clock at ${target}`, () => Date.now() >= target, { everyMs: 1 });
}

/** Whether Date is Jest's fake (jest.useFakeTimers, as freezeDate makes it): it carries its clock. */
function isFrozen(): boolean {
  return typeof (Date as unknown as { clock?: unknown }).clock === 'object';
}
