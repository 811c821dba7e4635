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
