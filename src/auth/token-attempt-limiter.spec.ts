import { ExchangeRefused } from './key-exchange';
import type { AppError } from '../common/errors';
import { MemoryFailureCounter } from '../common/failure-counter';
import type { AppConfiguration } from '../config/configuration';
import { Metrics } from '../metrics/metrics';
import { TokenAttemptLimiter, tooManyRequests } from './token-attempt-limiter';

describe('MemoryFailureCounter', () => {
  let now = 1_000_000;
  let counter: MemoryFailureCounter;
  beforeEach(() => {
    now = 1_000_000;
    counter = new MemoryFailureCounter(60_000, () => now);
  });
  afterEach(() => counter.close());

  const reserve = async (key: string, limit = 3, windowMs = 60_000) => {
    const { granted, resetsInMs, release } = await counter.reserve(key, limit, windowMs);
    return { granted, resetsInMs, release };
  };

  it('opens a window with the first slot and grants slots up to the limit within it', async () => {
    expect(await reserve('a')).toMatchObject({ granted: true, resetsInMs: 60_000 });
    now += 10_000;
    expect(await reserve('a')).toMatchObject({ granted: true, resetsInMs: 50_000 });
    expect(await reserve('a')).toMatchObject({ granted: true, resetsInMs: 50_000 });
    expect(await reserve('a')).toMatchObject({ granted: false, resetsInMs: 50_000 });
    // A refused reservation took nothing, and another key has its own window.
    expect(await reserve('a', 4)).toMatchObject({ granted: true });
    expect(await reserve('b')).toMatchObject({ granted: true, resetsInMs: 60_000 });
  });

  it('takes a given-back slot off the count, once, and drops a window left empty', async () => {
    const first = await reserve('a', 2);
    const second = await reserve('a', 2);
    expect((await reserve('a', 2)).granted).toBe(false);
    second.release();
    second.release();
    expect(counter.size).toBe(1);
    const third = await reserve('a', 2);
    expect(third.granted).toBe(true);
    expect((await reserve('a', 2)).granted).toBe(false);
    first.release();
    third.release();
    expect(counter.size).toBe(0);
  });

  it('starts from zero once the window has closed, never lowers a later window, and sweeps closed ones', async () => {
    const old = await reserve('a', 3, 1_000);
    await reserve('a', 3, 1_000);
    await reserve('b', 3, 5_000);
    now += 1_000;
    const fresh = await reserve('a', 3, 1_000);
    expect(fresh).toMatchObject({ granted: true, resetsInMs: 1_000 });
    old.release();
    await reserve('a', 3, 1_000);
    await reserve('a', 3, 1_000);
    expect((await reserve('a', 3, 1_000)).granted).toBe(false);
    now += 1_000;
    counter.sweep();
    expect(counter.size).toBe(1);
  });
});

describe('TokenAttemptLimiter', () => {
  const config = { rateLimit: { tokenFailuresPerMinute: 2, tokenFailureWindowSeconds: 60 } } as AppConfiguration;
  let counter: MemoryFailureCounter;
  let limiter: TokenAttemptLimiter;
  beforeEach(() => {
    counter = new MemoryFailureCounter();
    limiter = new TokenAttemptLimiter(config, counter, new Metrics());
  });
  afterEach(() => counter.close());

  const refusal = () => new ExchangeRefused('invalid_credentials');
  const outcome = (attempt: Promise<unknown>) =>
    attempt.then(
      () => 'ok',
      (error: AppError) => error.status,
    );
  /** A check that resolves (or fails) when told to, counting its runs. */
  function deferredCheck(fail: boolean) {
    let runs = 0;
    let settle!: () => void;
    const gate = new Promise<void>((resolve) => (settle = resolve));
    const check = async () => {
      runs += 1;
      await gate;
      if (fail) throw refusal();
      return 'token';
    };
    return { check, settle, runs: () => runs };
  }

  it('queues good attempts beyond the limit instead of refusing them, and still refuses a burst of failures', async () => {
    // Limit 2: 10 different good key values from one address, all in flight at once.
    const good = Array.from({ length: 10 }, () => deferredCheck(false));
    const attempts = good.map(({ check }, i) => outcome(limiter.attempt('203.0.113.7', `good-${i}`, check)));
    await new Promise((resolve) => setImmediate(resolve));
    for (const { settle } of good) settle();
    expect(await Promise.all(attempts)).toEqual(Array(10).fill('ok'));
    // The address still has both failures left.
    const bad = Array.from({ length: 10 }, () => deferredCheck(true));
    const refused = bad.map(({ check }, i) => outcome(limiter.attempt('203.0.113.7', `bad-${i}`, check)));
    await new Promise((resolve) => setImmediate(resolve));
    for (const { settle } of bad) settle();
    const statuses = await Promise.all(refused);
    expect(statuses.filter((status) => status === 401)).toHaveLength(2);
    expect(statuses.filter((status) => status === 429)).toHaveLength(8);
    expect(bad.reduce((sum, { runs }) => sum + runs(), 0)).toBe(2);
  });

  it('wakes one waiting attempt per check that ends, not every one: each asks for a slot about twice at most', async () => {
    const reserve = jest.spyOn(counter, 'reserve');
    // Limit 2: 50 good attempts from one address, their checks ending one after another.
    const attempts = Array.from({ length: 50 }, (_, i) =>
      outcome(limiter.attempt('203.0.113.8', `good-${i}`, () => new Promise((ok) => setImmediate(() => ok('token'))))),
    );
    expect(await Promise.all(attempts)).toEqual(Array(50).fill('ok'));
    // Waking all 48 waiters at each end made them ask about 1,200 times.
    expect(reserve.mock.calls.length).toBeLessThanOrEqual(100);
    expect(counter.size).toBe(0);
  });

  it('refuses an attempt before its check once the address has no failure left (429)', async () => {
    const check = jest.fn(() => Promise.reject(refusal()));
    expect(await outcome(limiter.attempt('10.0.0.1', 'k1', check))).toBe(401);
    await limiter.countFailure('10.0.0.1');
    expect(await outcome(limiter.attempt('10.0.0.1', 'k2', check))).toBe(429);
    expect(check).toHaveBeenCalledTimes(1);
    await expect(limiter.countFailure('10.0.0.1')).rejects.toMatchObject({ status: 429 });
    expect(await outcome(limiter.attempt('10.0.0.2', 'k3', () => Promise.resolve('token')))).toBe('ok');
  });

  it('holds a slot while a check runs: parallel different attempts beyond the limit are refused before theirs', async () => {
    const slow = deferredCheck(true);
    const attempts = ['a', 'b', 'c', 'd'].map((value) => outcome(limiter.attempt('10.0.0.1', value, slow.check)));
    await new Promise((resolve) => setImmediate(resolve));
    expect(slow.runs()).toBe(2);
    slow.settle();
    expect(await Promise.all(attempts)).toEqual([401, 401, 429, 429]);
  });

  it('gives the slot of a success back, and of an error that is not a refusal (e.g. the database is down)', async () => {
    for (let i = 0; i < 5; i += 1) {
      expect(await outcome(limiter.attempt('10.0.0.1', `k${i}`, () => Promise.resolve('token')))).toBe('ok');
      await expect(limiter.attempt('10.0.0.1', `x${i}`, () => Promise.reject(new Error('down')))).rejects.toThrow(
        'down',
      );
    }
    expect(counter.size).toBe(0);
    await limiter.countFailure('10.0.0.1');
    await limiter.countFailure('10.0.0.1');
    await expect(limiter.countFailure('10.0.0.1')).rejects.toMatchObject({ status: 429 });
  });

  it('shares one check and one slot between identical attempts in flight: all succeed together', async () => {
    const slow = deferredCheck(false);
    const attempts = Array.from({ length: 50 }, () => outcome(limiter.attempt('10.0.0.1', 'same', slow.check)));
    await new Promise((resolve) => setImmediate(resolve));
    // A different key from the same address still finds a slot free while the 50 are in flight.
    expect(await outcome(limiter.attempt('10.0.0.1', 'other', () => Promise.resolve('token')))).toBe('ok');
    slow.settle();
    expect(await Promise.all(attempts)).toEqual(Array(50).fill('ok'));
    expect(slow.runs()).toBe(1);
    expect(counter.size).toBe(0);
  });

  it('counts each identical attempt that shared a failed check as a failure of its own', async () => {
    const slow = deferredCheck(true);
    const attempts = Array.from({ length: 5 }, () => outcome(limiter.attempt('10.0.0.1', 'same', slow.check)));
    await new Promise((resolve) => setImmediate(resolve));
    slow.settle();
    expect(await Promise.all(attempts)).toEqual([401, 401, 429, 429, 429]);
    expect(slow.runs()).toBe(1);
  });
});

describe('tooManyRequests', () => {
  it('rounds Retry-After up to whole seconds, at least 1', () => {
    expect(tooManyRequests('too_many_failed_exchanges', 59_001).headers).toEqual({ 'Retry-After': '60' });
    expect(tooManyRequests('too_many_failed_exchanges', 1).headers).toEqual({ 'Retry-After': '1' });
    expect(tooManyRequests('too_many_failed_exchanges', 0).headers).toEqual({ 'Retry-After': '1' });
    expect(tooManyRequests('too_many_failed_exchanges', 0).status).toBe(429);
  });
});
