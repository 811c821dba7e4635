import { MAX_JSON_DEPTH, nestsDeeperThan } from './json-body';

const bytes = (text: string): Buffer => Buffer.from(text, 'utf8');

describe('nestsDeeperThan', () => {
  it.each([
    ['[]', 1, false],
    ['[[]]', 1, true],
    ['{"a":[{"b":[]}]}', 4, false],
    ['{"a":[{"b":[]}]}', 3, true],
    ['"[[[[[["', 1, false],
    ['["\\"[[[["]', 1, false],
    ['["\\\\",[[]]]', 2, true],
    ['{"é😀":[["[{"]]}', 3, false],
  ])('%s with a bound of %d: %s', (json, max, expected) => {
    expect(nestsDeeperThan(bytes(json), max)).toBe(expected);
  });

  it('takes exactly MAX_JSON_DEPTH levels and refuses one more', () => {
    const at = (depth: number) => bytes('['.repeat(depth) + ']'.repeat(depth));
    expect(nestsDeeperThan(at(MAX_JSON_DEPTH), MAX_JSON_DEPTH)).toBe(false);
    expect(nestsDeeperThan(at(MAX_JSON_DEPTH + 1), MAX_JSON_DEPTH)).toBe(true);
  });

  it('counts depth, not brackets: many siblings are fine', () => {
    expect(nestsDeeperThan(bytes(`[${'[],'.repeat(10_000)}[]]`), 2)).toBe(false);
  });
});
