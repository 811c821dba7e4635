import { BatchingThread } from './batching-thread';

/** Answers each item with the size of the message it came in; takes `workerData` ms a message. */
const ECHO_THREAD = `
const { parentPort, workerData } = require('node:worker_threads');
parentPort.on('message', ({ batch, items }) => {
  const until = Date.now() + workerData;
  while (Date.now() < until);
  parentPort.postMessage({ batch, results: items.map((item) => item === 'fail' ? { error: { message: 'no', code: 'E_NO' } } : { value: { item, batchSize: items.length } }) });
});
`;

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('BatchingThread', () => {
  let thread: BatchingThread<string, { item: string; batchSize: number }>;

  afterEach(() => thread.close());

  it('sends what one event-loop turn asks for as one message and answers each item with its own result', async () => {
    thread = new BatchingThread('echo', ECHO_THREAD, { workerData: 0 });
    const answers = await Promise.all(['a', 'b', 'c'].map((item) => thread.run(item)));
    expect(answers).toEqual([
      { item: 'a', batchSize: 3 },
      { item: 'b', batchSize: 3 },
      { item: 'c', batchSize: 3 },
    ]);
  });

  it('while a message is unanswered, gathers what later turns ask for into the next one', async () => {
    thread = new BatchingThread('echo', ECHO_THREAD, { workerData: 100 });
    const first = thread.run('first');
    await nextTurn();
    await nextTurn(); // 'first' has gone; the thread is busy with it for 100 ms
    const later: Array<Promise<{ item: string; batchSize: number }>> = [];
    for (const item of ['x', 'y', 'z']) {
      later.push(thread.run(item));
      await nextTurn();
    }
    expect(await first).toEqual({ item: 'first', batchSize: 1 });
    expect(await Promise.all(later)).toEqual([
      { item: 'x', batchSize: 3 },
      { item: 'y', batchSize: 3 },
      { item: 'z', batchSize: 3 },
    ]);
  });

  it("refuses an item the thread failed with the thread's message and code, and the others of its message are answered", async () => {
    thread = new BatchingThread('echo', ECHO_THREAD, { workerData: 0 });
    const [good, bad] = await Promise.allSettled([thread.run('ok'), thread.run('fail')]);
    expect(good).toEqual({ status: 'fulfilled', value: { item: 'ok', batchSize: 2 } });
    expect(bad).toMatchObject({ status: 'rejected', reason: { message: 'no', code: 'E_NO' } });
  });
});
