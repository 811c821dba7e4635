/** The retry schedule (docs/webhooks.md#retries, docs/adr/0037-signed-webhooks.md#decision). */
export const FIRST_RETRY_MS = 10_000;
export const MAX_RETRY_MS = 2 * 60 * 60 * 1000;
/** A delivery not answered 2xx within this time of its event is `failed`. */
export const RETRY_WINDOW_MS = 24 * 60 * 60 * 1000;
/** Nor after this many attempts, whatever the jitter made of the waits (the window alone allows a few more). */
export const MAX_ATTEMPTS = 25;

/**
 * The wait after the `attempts`-th failed attempt: 10 s doubling up to 2 h, with "equal jitter" (between half and all
 * of it), so that the endpoints of one outage are not all retried in the same second.
 */
export function retryDelayMs(attempts: number, random: () => number = Math.random): number {
  const base = Math.min(FIRST_RETRY_MS * 2 ** Math.max(0, attempts - 1), MAX_RETRY_MS);
  return Math.round(base / 2 + (random() * base) / 2);
}

/** When to try again after the `attempts`-th failed attempt at `at`, or null past the window or the attempts: give up. */
export function nextAttemptAt(
  createdAt: Date,
  at: Date,
  attempts: number,
  random: () => number = Math.random,
): Date | null {
  if (attempts >= MAX_ATTEMPTS) return null;
  const next = at.getTime() + retryDelayMs(attempts, random);
  return next - createdAt.getTime() > RETRY_WINDOW_MS ? null : new Date(next);
}
