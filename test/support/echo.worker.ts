import { parentPort, workerData } from 'node:worker_threads';
import type { BatchAnswer, BatchRequest, ThreadResult } from '../../src/common/thread-protocol';

/**
 * BatchingThread's test worker: answers each item with the size of the message it came in, after
 * keeping the thread busy for `workerData` ms a message. The item 'fail' is refused with a code;
 * 'exit' stops the thread (exit code 3) without answering.
 */
export interface Echo {
  item: string;
  batchSize: number;
}

const port = parentPort;
if (port === null) throw new Error('echo.worker runs on a worker thread');
const busyMs = workerData as number;

port.on('message', ({ batch, items }: BatchRequest<string>) => {
  const until = Date.now() + busyMs;
  while (Date.now() < until) {
    // busy, as a thread doing real work is: the main thread gathers the next batch meanwhile
  }
  if (items.includes('exit')) process.exit(3);
  const results = items.map((item): ThreadResult<Echo> =>
    item === 'fail' ? { error: { message: 'no', code: 'E_NO' } } : { value: { item, batchSize: items.length } },
  );
  port.postMessage({ batch, results } satisfies BatchAnswer<Echo>);
});
