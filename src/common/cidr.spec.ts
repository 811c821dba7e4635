import { allowList, AddressList, normalizeCidr, parseCidr } from './cidr';

describe('CIDR notation (docs/api.md#allowlists-and-rate-limits)', () => {
  it.each([
    ['10.0.0.0/8', '10.0.0.0/8'],
    ['10.1.2.3/8', '10.0.0.0/8'],
    ['203.0.113.7', '203.0.113.7/32'],
    ['192.168.1.129/25', '192.168.1.128/25'],
    ['0.0.0.0/0', '0.0.0.0/0'],
    ['2001:DB8:0:0::1/64', '2001:db8::/64'],
    ['2001:db8::1', '2001:db8::1/128'],
    ['2001:0db8:0000:0000:0000:0000:0000:0001/128', '2001:db8::1/128'],
    ['2001:db8:0:1:0:0:0:1/128', '2001:db8:0:1::1/128'],
    ['1:0:0:2:0:0:0:3/128', '1:0:0:2::3/128'],
    ['1:2:3:4:5:6:7:8/128', '1:2:3:4:5:6:7:8/128'],
    ['::/0', '::/0'],
    ['::1', '::1/128'],
    ['fe80::/10', 'fe80::/10'],
    ['::ffff:10.0.0.0/104', '10.0.0.0/8'],
    ['::ffff:0:0/96', '0.0.0.0/0'],
    ['64:ff9b::192.0.2.33/128', '64:ff9b::c000:221/128'],
    ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4:5:6:102:304/128'],
  ])('normalizes %s to %s', (input, expected) => {
    expect(normalizeCidr(input)).toBe(expected);
  });

  it.each([
    '',
    '10.0.0.0/33',
    '10.0.0.300/8',
    '10.0.0/8',
    '010.0.0.0/8',
    '10.0.0.0/08',
    '10.0.0.0/',
    '10.0.0.0/-1',
    ' 10.0.0.0/8',
    '10.0.0.0/8 ',
    '2001:db8::/129',
    'fe80::1%eth0/64',
    '2001:db8:::/64',
    'example.com',
    '10.0.0.0/8,10.0.0.0/9',
    '1'.repeat(80),
  ])('refuses %j', (input) => {
    expect(parseCidr(input)).toBeNull();
  });

  it('checks IPv4 and IPv6 addresses, IPv4-mapped ones as IPv4', () => {
    const list = allowList('10.0.0.0/8,192.0.2.1/32,2001:db8::/32');
    expect(list.allows('10.255.0.1')).toBe(true);
    expect(list.allows('11.0.0.1')).toBe(false);
    expect(list.allows('192.0.2.1')).toBe(true);
    expect(list.allows('192.0.2.2')).toBe(false);
    expect(list.allows('::ffff:10.1.2.3')).toBe(true);
    expect(list.allows('::ffff:11.1.2.3')).toBe(false);
    expect(list.allows('2001:db8:ffff::1')).toBe(true);
    expect(list.allows('2001:db9::1')).toBe(false);
    expect(list.allows('fe80::1%eth0')).toBe(false);
    expect(list.allows(undefined)).toBe(false);
    expect(list.allows('not an address')).toBe(false);
  });

  it('takes /0 as every address of its family, and a /128 as one', () => {
    expect(allowList('0.0.0.0/0').allows('203.0.113.9')).toBe(true);
    expect(allowList('0.0.0.0/0').allows('2001:db8::1')).toBe(false);
    expect(allowList('::/0').allows('2001:db8::1')).toBe(true);
    expect(allowList('2001:db8::1/128').allows('2001:db8::1')).toBe(true);
    expect(allowList('2001:db8::1/128').allows('2001:db8::2')).toBe(false);
    expect(allowList('2001:db8:0:0:8000::/65').allows('2001:db8::8000:0:0:1')).toBe(true);
    expect(allowList('2001:db8:0:0:8000::/65').allows('2001:db8::7fff:0:0:1')).toBe(false);
  });

  it('compiles a stored list once', () => {
    expect(allowList('198.51.100.0/24')).toBe(allowList('198.51.100.0/24'));
    expect(allowList('198.51.100.0/24')).toBeInstanceOf(AddressList);
  });
});
