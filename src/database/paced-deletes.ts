import { performance } from 'node:perf_hooks';
import { setTimeout as sleep } from 'node:timers/promises';

/** The least and the most one statement deletes, and its first size. */
export const PACED_MAX_BATCH_SIZE = 1000;
export const PACED_FIRST_BATCH_SIZE = 100;
const PACED_MIN_BATCH_SIZE = 10;
/** What one statement should take: the batch grows (at most doubling) or shrinks towards it. */
export const PACED_STATEMENT_TARGET_MS = 20;
/** Least pause between two statements; at least four times the last statement's time. */
export const PACED_PAUSE_MS = 100;

export interface PacedDeleteOptions {
  maxBatchSize?: number;
  pauseMs?: number;
  /** Stops after the current statement. */
  signal: AbortSignal;
}

/**
 * Deletes with `deleteBatch(size)` (how many it deleted) until a statement finds fewer than `size`, in short, paced
 * statements: pruning takes at most a fifth of the database's time and nothing waits longer than one statement
 * (docs/operations.md#retention). Rejects with a statement's error.
 */
export async function deletePaced(
  deleteBatch: (size: number) => Promise<number>,
  { maxBatchSize = PACED_MAX_BATCH_SIZE, pauseMs = PACED_PAUSE_MS, signal }: PacedDeleteOptions,
): Promise<void> {
  let size = Math.min(PACED_FIRST_BATCH_SIZE, maxBatchSize);
  while (!signal.aborted) {
    const started = performance.now();
    const count = await deleteBatch(size);
    const tookMs = performance.now() - started;
    if (count < size) break;
    const fitting = Math.round((size * PACED_STATEMENT_TARGET_MS) / Math.max(tookMs, 1));
    size = Math.max(PACED_MIN_BATCH_SIZE, Math.min(maxBatchSize, size * 2, fitting));
    await sleep(Math.max(pauseMs, tookMs * 4), undefined, { signal }).catch(() => undefined);
  }
}
