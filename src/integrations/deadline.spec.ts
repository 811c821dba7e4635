import { Deadline, DeadlineExceededError } from './deadline';

describe('Deadline', () => {
  it('lets work that ends in time through, with its result or its error', async () => {
    const deadline = new Deadline(1000);
    await expect(deadline.race(Promise.resolve('done'))).resolves.toBe('done');
    await expect(deadline.race(Promise.reject(new Error('own')))).rejects.toThrow('own');
    expect(deadline.signal.aborted).toBe(false);
    deadline.clear();
  });

  it('rejects with DeadlineExceededError when the time is up, and aborts its signal', async () => {
    const deadline = new Deadline(20);
    const never = new Promise<never>(() => undefined);
    await expect(deadline.race(never)).rejects.toEqual(new DeadlineExceededError(20));
    expect(deadline.signal.aborted).toBe(true);
    expect(deadline.signal.reason).toBeInstanceOf(DeadlineExceededError);
    await expect(deadline.race(Promise.resolve(1))).rejects.toBeInstanceOf(DeadlineExceededError);
  });

  it('counts the time left down to zero', () => {
    let now = 1000;
    const deadline = new Deadline(500, () => now);
    expect(deadline.remainingMs()).toBe(500);
    now += 200;
    expect(deadline.remainingMs()).toBe(300);
    now += 1000;
    expect(deadline.remainingMs()).toBe(0);
    deadline.clear();
  });

  it('never fires once cleared', async () => {
    const deadline = new Deadline(10);
    deadline.clear();
    await new Promise((resolve) => setTimeout(resolve, 30));
    expect(deadline.signal.aborted).toBe(false);
  });
});
