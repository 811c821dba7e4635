import { Worker } from 'node:worker_threads';

/** Most items one message carries. */
const MAX_BATCH = 256;

/** What the thread answers for one item: a value, or the message (and code) of an error. */
export type ThreadResult<Result> = { value: Result } | { error: { message: string; code?: string } };

interface Pending<Result> {
  resolve(value: Result): void;
  reject(error: Error): void;
}

function threadError({ message, code }: { message: string; code?: string }): Error {
  const error = new Error(message);
  return code === undefined ? error : Object.assign(error, { code });
}

/**
 * Work for a thread of its own, sent in batches: the items asked for during one event-loop turn go
 * as one message at setImmediate (`{ batch, items }`) and come back as one (`{ batch, results }`,
 * a ThreadResult per item, in order). On the 2-core VM, handing one job to a sleeping thread costs
 * the event loop 15-20 µs (waking it); a batch pays that once (README "Performance").
 *
 * `source` is the thread's CommonJS code (run with `eval`), which answers those messages; other
 * messages (`post`) are its own business. The thread starts at the first item and is given
 * `onStart`'s messages first; it keeps the process alive only while it owes answers. If it dies,
 * the items it had are refused and the next item starts a new thread. `close` stops it.
 */
export class BatchingThread<Item, Result> {
  private queued: Array<Pending<Result> & { item: Item }> = [];
  /** Batches sent and not yet answered, with the thread they went to. */
  private readonly inFlight = new Map<number, { worker: Worker; waiting: Array<Pending<Result>> }>();
  private worker: Worker | undefined;
  private nextBatch = 0;
  private scheduled = false;

  constructor(
    private readonly name: string,
    private readonly source: string,
    private readonly options: { workerData?: unknown; onStart?: (post: (message: unknown) => void) => void } = {},
  ) {}

  run(item: Item): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.queued.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** A message to the running thread, if any (a new thread gets `onStart`'s instead). */
  post(message: unknown): void {
    this.worker?.postMessage(message);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker !== undefined) await worker.terminate();
  }

  /**
   * Sends what is queued at the end of this event-loop turn, unless the thread still owes an
   * answer: then it is sent when that answer arrives. Under load one batch is always in flight and
   * the next one gathers everything asked for meanwhile (a thread woken once per batch, not per item).
   */
  private schedule(): void {
    if (this.scheduled || this.queued.length === 0) return;
    if (this.worker !== undefined && this.inFlight.size > 0) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      this.flush();
    });
  }

  private flush(): void {
    const queued = this.queued;
    this.queued = [];
    const worker = this.thread();
    if (this.inFlight.size === 0) worker.ref();
    for (let start = 0; start < queued.length; start += MAX_BATCH) {
      const chunk = queued.slice(start, start + MAX_BATCH);
      const batch = this.nextBatch++;
      this.inFlight.set(batch, { worker, waiting: chunk });
      worker.postMessage({ batch, items: chunk.map((entry) => entry.item) });
    }
  }

  private thread(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(this.source, { eval: true, workerData: this.options.workerData });
    this.options.onStart?.((message) => worker.postMessage(message));
    worker.on('message', (message: { batch: number; results: Array<ThreadResult<Result>> }) => this.settle(message));
    const fail = (error: Error): void => {
      if (this.worker === worker) this.worker = undefined;
      for (const [batch, sent] of this.inFlight) {
        if (sent.worker !== worker) continue;
        this.inFlight.delete(batch);
        for (const pending of sent.waiting) pending.reject(error);
      }
      this.schedule();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the ${this.name} thread stopped (exit code ${code})`)));
    // After its listeners: a worker unreferenced before them would be referenced again by them.
    worker.unref();
    this.worker = worker;
    return worker;
  }

  private settle({ batch, results }: { batch: number; results: Array<ThreadResult<Result>> }): void {
    const sent = this.inFlight.get(batch);
    if (sent === undefined) return;
    this.inFlight.delete(batch);
    if (this.inFlight.size === 0) sent.worker.unref();
    sent.waiting.forEach((pending, index) => {
      const result = results[index];
      if ('value' in result) pending.resolve(result.value);
      else pending.reject(threadError(result.error));
    });
    this.schedule();
  }
}
