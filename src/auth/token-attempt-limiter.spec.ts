import { MemoryFailureCounter } from '../common/failure-counter';
import { clientNetwork, tooManyRequests } from './token-attempt-limiter';

describe('clientNetwork', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:0db8:0001:0002:aaaa::1', '2001:db8:1:2::/64'],
    ['2001:DB8:1:2::', '2001:db8:1:2::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['fe80::1%eth0', 'fe80:0:0:0::/64'],
    [undefined, 'unknown'],
    ['', 'unknown'],
  ])('%s -> %s', (address, expected) => {
    expect(clientNetwork(address)).toBe(expected);
  });

  it('puts every address of one /64 under one counter, and other /64s under others', () => {
    expect(clientNetwork('2001:db8:1:2:ffff::9')).toBe(clientNetwork('2001:db8:1:2::1'));
    expect(clientNetwork('2001:db8:1:3::1')).not.toBe(clientNetwork('2001:db8:1:2::1'));
  });
});

describe('MemoryFailureCounter', () => {
  let now = 1_000_000;
  let counter: MemoryFailureCounter;
  beforeEach(() => {
    now = 1_000_000;
    counter = new MemoryFailureCounter(60_000, () => now);
  });
  afterEach(() => counter.close());

  it('opens a window at the first failure and counts within it', async () => {
    expect(await counter.peek(['a'])).toEqual([{ count: 0, resetsInMs: 0 }]);
    expect(await counter.increment('a', 60_000)).toEqual({ count: 1, resetsInMs: 60_000 });
    now += 10_000;
    expect(await counter.increment('a', 60_000)).toEqual({ count: 2, resetsInMs: 50_000 });
    expect(await counter.peek(['a', 'b'])).toEqual([
      { count: 2, resetsInMs: 50_000 },
      { count: 0, resetsInMs: 0 },
    ]);
  });

  it('starts from zero once the window has closed, and sweeps closed windows', async () => {
    await counter.increment('a', 1_000);
    await counter.increment('b', 5_000);
    now += 1_000;
    expect(await counter.peek(['a'])).toEqual([{ count: 0, resetsInMs: 0 }]);
    counter.sweep();
    expect(counter.size).toBe(1);
    expect(await counter.increment('a', 1_000)).toEqual({ count: 1, resetsInMs: 1_000 });
  });
});

describe('tooManyRequests', () => {
  it('rounds Retry-After up to whole seconds, at least 1', () => {
    expect(tooManyRequests(59_001).headers).toEqual({ 'Retry-After': '60' });
    expect(tooManyRequests(1).headers).toEqual({ 'Retry-After': '1' });
    expect(tooManyRequests(0).headers).toEqual({ 'Retry-After': '1' });
    expect(tooManyRequests(0).status).toBe(429);
  });
});
