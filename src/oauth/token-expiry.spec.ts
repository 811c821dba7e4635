import { cacheSeconds, tokenExpiry } from './token-expiry';

describe('tokenExpiry', () => {
  it.each([
    ['a key without expiry: the token’s exp', 2_000, null, 2_000],
    ['a key expiring later: the token’s exp', 2_000, 3_000_000, 2_000],
    ['a rotated key’s grace end first: that, rounded down', 2_000, 1_500_999, 1_500],
    ['both at the same second', 2_000, 2_000_000, 2_000],
  ] as const)('%s', (_name, exp, keyMs, expected) => {
    expect(tokenExpiry(exp, keyMs)).toBe(expected);
  });
});

describe('cacheSeconds', () => {
  const now = 1_000_000;
  it.each([
    ['no key expiry: the configured time', 5, null, 5],
    ['expiry far ahead: the configured time', 5, now + 60_000, 5],
    ['2.9 s left: 2', 5, now + 2_900, 2],
    ['0.9 s left: 0 (not cached)', 1, now + 900, 0],
    ['already past: 0', 1, now - 1, 0],
    ['configured 0: 0', 0, now + 60_000, 0],
  ] as const)('%s', (_name, max, keyMs, expected) => {
    expect(cacheSeconds(max, keyMs, now)).toBe(expected);
  });
});
