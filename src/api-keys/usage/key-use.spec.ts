import { MAX_USER_AGENT_LENGTH, usageUserAgent } from './key-use';

/** A header value as Node hands it over: the UTF-8 bytes, one Latin-1 character each. */
const onTheWire = (text: string): string => Buffer.from(text, 'utf8').toString('latin1');

describe('usageUserAgent', () => {
  it.each([
    ['a usual value', 'curl/8.5.0', 'curl/8.5.0'],
    [
      'spaces and punctuation',
      'Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101',
      'Mozilla/5.0 (X11; Linux x86_64) Gecko/20100101',
    ],
    ['exactly 255 characters', 'a'.repeat(255), 'a'.repeat(255)],
  ])('keeps %s as it is', (_name, header, expected) => {
    expect(usageUserAgent(header)).toBe(expected);
  });

  it.each([
    ['absent', undefined],
    ['empty', ''],
    ['control characters only', '\t\u0001\u007f'],
    ['not a single value', ['a', 'b']],
  ])('is null when %s', (_name, header) => {
    expect(usageUserAgent(header)).toBeNull();
  });

  it('cuts a long value to 255 code points', () => {
    expect(usageUserAgent('b'.repeat(300))).toBe('b'.repeat(255));
  });

  it('reads the bytes as UTF-8 and counts code points: an emoji is one, never cut in half', () => {
    expect(usageUserAgent(onTheWire('client/1.0 (café; 日本)'))).toBe('client/1.0 (café; 日本)');
    const emoji = '\u{1F600}';
    const cut = usageUserAgent(onTheWire(`${'x'.repeat(254)}${emoji}${emoji}`));
    expect(cut).toBe(`${'x'.repeat(254)}${emoji}`);
    expect([...cut!]).toHaveLength(MAX_USER_AGENT_LENGTH);
    expect(usageUserAgent(onTheWire(emoji.repeat(300)))).toBe(emoji.repeat(255));
  });

  it('replaces bytes that are not UTF-8 with U+FFFD', () => {
    expect(usageUserAgent('agent \xff\xfe/1')).toBe('agent \ufffd\ufffd/1');
  });

  it('strips control characters (C0, DEL, C1) before cutting', () => {
    expect(usageUserAgent('a\tb\u0000c\u007fd')).toBe('abcd');
    expect(usageUserAgent(onTheWire('a\u0085b\u009fc'))).toBe('abc');
    expect(usageUserAgent(`${'\t'.repeat(100)}${'y'.repeat(300)}`)).toBe('y'.repeat(255));
  });
});
