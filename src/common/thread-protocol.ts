/** Types only, so a worker loads none of the main thread's code. */

/** Items asked for during one event-loop turn (at most 256), numbered by the main thread. */
export interface BatchRequest<Item> {
  batch: number;
  items: Item[];
}

export interface BatchAnswer<Result> {
  batch: number;
  results: Array<ThreadResult<Result>>;
}

/** What the thread answers for one item: a value, or the message (and code) of an error. */
export type ThreadResult<Result> = { value: Result } | { error: { message: string; code?: string } };
