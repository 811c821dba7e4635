/**
 * The messages between a BatchingThread (batching-thread.ts, the main thread) and its worker module (`*.worker.ts`,
 * compiled beside it): the worker imports these as types only, so it loads none of the main thread's code.
 */

/** Items asked for during one event-loop turn (at most 256), numbered by the main thread. */
export interface BatchRequest<Item> {
  batch: number;
  items: Item[];
}

/** The answer to a BatchRequest: one result per item, in the order of its items. */
export interface BatchAnswer<Result> {
  batch: number;
  results: Array<ThreadResult<Result>>;
}

/** What the thread answers for one item: a value, or the message (and code) of an error. */
export type ThreadResult<Result> = { value: Result } | { error: { message: string; code?: string } };
