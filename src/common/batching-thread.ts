import { join } from 'node:path';
import { Worker } from 'node:worker_threads';
import type { BatchAnswer, BatchRequest } from './thread-protocol';

const MAX_BATCH = 256;

/** The compiled code's folder (dist/): worker files sit under it at their path under src/. */
export const COMPILED_DIRECTORY = join(__dirname, '..');

/**
 * The folder that holds the compiled worker files: COMPILED_DIRECTORY, unless the application is given another
 * (WorkersModule): code run from its TypeScript sources (the tests) names a compiled copy of src/.
 */
export const WORKER_DIRECTORY = Symbol('WORKER_DIRECTORY');

/** The compiled worker file by its path under src/ (`auth/signing.worker.js`). */
export function workerFile(path: string, directory: string = COMPILED_DIRECTORY): string {
  return join(directory, path);
}

interface Pending<Result> {
  resolve(value: Result): void;
  reject(error: Error): void;
}

function threadError({ message, code }: { message: string; code?: string }): Error {
  const error = new Error(message);
  return code === undefined ? error : Object.assign(error, { code });
}

/**
 * A worker thread fed in batches: one message per event-loop turn, answered in order
 * (docs/adr/0011-worker-threads-as-compiled-modules.md).
 */
export class BatchingThread<Item, Result, Message = never> {
  private queued: Array<Pending<Result> & { item: Item }> = [];
  private readonly inFlight = new Map<number, { worker: Worker; waiting: Array<Pending<Result>> }>();
  private worker: Worker | undefined;
  private nextBatch = 0;
  private scheduled = false;

  constructor(
    private readonly name: string,
    private readonly file: string | URL,
    private readonly options: { workerData?: unknown; onStart?: (post: (message: Message) => void) => void } = {},
  ) {}

  run(item: Item): Promise<Result> {
    return new Promise((resolve, reject) => {
      this.queued.push({ item, resolve, reject });
      this.schedule();
    });
  }

  /** A new thread gets `onStart`'s message instead. */
  post(message: Message): void {
    this.worker?.postMessage(message);
  }

  async close(): Promise<void> {
    const worker = this.worker;
    this.worker = undefined;
    if (worker !== undefined) await worker.terminate();
  }

  /** While the thread still owes an answer, the queue waits for it. */
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
      worker.postMessage({ batch, items: chunk.map((entry) => entry.item) } satisfies BatchRequest<Item>);
    }
  }

  private thread(): Worker {
    if (this.worker !== undefined) return this.worker;
    const worker = new Worker(this.file, { workerData: this.options.workerData });
    this.options.onStart?.((message) => worker.postMessage(message));
    worker.on('message', (message: BatchAnswer<Result>) => this.settle(message));
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

  private settle({ batch, results }: BatchAnswer<Result>): void {
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
