import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import type { Echo } from '../../test/support/echo.worker';
import { testWorkerFile } from '../../test/support/build-directory';
import { BatchingThread } from './batching-thread';

/** test/support/echo.worker.ts, compiled by the global setup (as production runs dist/). */
const ECHO_WORKER = testWorkerFile('test-support/echo.worker.js');

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

describe('BatchingThread', () => {
  let thread: BatchingThread<string, Echo>;

  afterEach(() => thread.close());

  it('sends what one event-loop turn asks for as one message and answers each item with its own result', async () => {
    thread = new BatchingThread('echo', ECHO_WORKER, { workerData: 0 });
    const answers = await Promise.all(['a', 'b', 'c'].map((item) => thread.run(item)));
    expect(answers).toEqual([
      { item: 'a', batchSize: 3 },
      { item: 'b', batchSize: 3 },
      { item: 'c', batchSize: 3 },
    ]);
  });

  it('while a message is unanswered, gathers what later turns ask for into the next one', async () => {
    thread = new BatchingThread('echo', ECHO_WORKER, { workerData: 100 });
    const first = thread.run('first');
    await nextTurn();
    await nextTurn(); // 'first' has gone; the thread is busy with it for 100 ms
    const later: Array<Promise<Echo>> = [];
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

  it('sends at most 256 items a message', async () => {
    thread = new BatchingThread('echo', ECHO_WORKER, { workerData: 0 });
    const answers = await Promise.all(Array.from({ length: 300 }, (_, index) => thread.run(`item-${index}`)));
    expect(answers.map((answer) => answer.batchSize)).toEqual([...Array(256).fill(256), ...Array(44).fill(44)]);
    expect(answers.map((answer) => answer.item)).toEqual(answers.map((_, index) => `item-${index}`));
  });

  it("refuses an item the thread failed with the thread's message and code, and the others of its message are answered", async () => {
    thread = new BatchingThread('echo', ECHO_WORKER, { workerData: 0 });
    const [good, bad] = await Promise.allSettled([thread.run('ok'), thread.run('fail')]);
    expect(good).toEqual({ status: 'fulfilled', value: { item: 'ok', batchSize: 2 } });
    expect(bad).toMatchObject({ status: 'rejected', reason: { message: 'no', code: 'E_NO' } });
  });

  it('refuses what a thread that died had, and the next item starts a new thread', async () => {
    thread = new BatchingThread('echo', ECHO_WORKER, { workerData: 0 });
    const outcomes = await Promise.allSettled([thread.run('a'), thread.run('exit')]);
    const stopped = new Error('the echo thread stopped (exit code 3)');
    expect(outcomes).toEqual([
      { status: 'rejected', reason: stopped },
      { status: 'rejected', reason: stopped },
    ]);
    expect(await thread.run('b')).toEqual({ item: 'b', batchSize: 1 });
  });

  it('refuses what the thread had when it is closed, and the next item starts a new thread', async () => {
    thread = new BatchingThread('echo', ECHO_WORKER, { workerData: 200 });
    await thread.run('started');
    const pending = thread.run('slow');
    await nextTurn();
    await nextTurn(); // sent; the thread is busy with it
    await thread.close();
    await expect(pending).rejects.toThrow(/^the echo thread stopped \(exit code \d+\)$/);
    expect(await thread.run('after')).toEqual({ item: 'after', batchSize: 1 });
  });

  it("refuses the items with the loader's error when the worker file is missing", async () => {
    thread = new BatchingThread('missing', testWorkerFile('test-support/missing.worker.js'));
    await expect(thread.run('a')).rejects.toMatchObject({ message: expect.stringContaining('missing.worker.js') });
  });

  it('keeps the process alive while it owes an answer, and not after', async () => {
    // A process of its own that asks for one item of a thread busy for 300 ms and never closes it:
    // it must print the answer (not exit before it arrives) and then exit by itself.
    const script = `
      const { BatchingThread, workerFile } = require(${JSON.stringify(testWorkerFile('common/batching-thread.js'))});
      const thread = new BatchingThread('echo', workerFile('test-support/echo.worker.js'), { workerData: 300 });
      thread.run('x').then((echo) => console.log(JSON.stringify(echo)));
    `;
    // Bounded below the test's 30 s so that a process that never exits fails here, with its output; 4 s was too short
    // for a process's start on a busy machine (it failed the whole-suite run at a load of 17).
    const { stdout } = await promisify(execFile)(process.execPath, ['-e', script], { timeout: 20_000 });
    expect(JSON.parse(stdout)).toEqual({ item: 'x', batchSize: 1 });
  });
});
