import { allowList, AddressList, coveredFamilies, Network, normalizeCidr, parseCidr } from './cidr';

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

  describe('coveredFamilies: whether a list allows every address of a family, from its merged ranges', () => {
    const networks = (...texts: string[]): Network[] => texts.map((text) => parseCidr(text)!);
    const covered = (...texts: string[]) => coveredFamilies(networks(...texts));
    const eighths = (family: 'v4' | 'v6', skip = -1): string[] =>
      Array.from({ length: 256 }, (_, i) => i)
        .filter((i) => i !== skip)
        .map((i) => (family === 'v4' ? `${i}.0.0.0/8` : `${(i << 8).toString(16)}::/8`));

    it.each([
      [['0.0.0.0/0'], { ipv4: true, ipv6: false }],
      [['::/0'], { ipv4: false, ipv6: true }],
      [['::ffff:0:0/96'], { ipv4: true, ipv6: false }],
      [['0.0.0.0/1', '128.0.0.0/1'], { ipv4: true, ipv6: false }],
      [['128.0.0.0/1', '0.0.0.0/1'], { ipv4: true, ipv6: false }],
      [['::ffff:0.0.0.0/97', '::ffff:128.0.0.0/97'], { ipv4: true, ipv6: false }],
      [
        ['0.0.0.0/2', '0.0.0.0/1', '64.0.0.0/2', '100.0.0.0/6', '128.0.0.0/2', '192.0.0.0/2'],
        { ipv4: true, ipv6: false },
      ],
      [['::/1', '8000::/1'], { ipv4: false, ipv6: true }],
      [['::/1', '8000::/2', 'c000::/2'], { ipv4: false, ipv6: true }],
    ])('%j: %j', (texts, expected) => {
      expect(covered(...texts)).toEqual(expected);
    });

    it('counts 256 /8s as every address, and one missing as not', () => {
      expect(covered(...eighths('v4'))).toEqual({ ipv4: true, ipv6: false });
      expect(covered(...eighths('v4', 255))).toEqual({ ipv4: false, ipv6: false });
      expect(covered(...eighths('v4', 0))).toEqual({ ipv4: false, ipv6: false });
      expect(covered(...eighths('v6'))).toEqual({ ipv4: false, ipv6: true });
      expect(covered(...eighths('v6', 0x80)).ipv6).toBe(false);
    });

    it('leaves a gap of one address uncovered', () => {
      expect(covered('0.0.0.0/1', '128.0.0.0/2', '192.0.0.0/3', '224.0.0.0/4', '240.0.0.0/5', '248.0.0.0/6')).toEqual({
        ipv4: false,
        ipv6: false,
      });
      // Every IPv4 address but 255.255.255.255: 32 networks.
      const allButLast = Array.from({ length: 32 }, (_, i) => {
        const start = i === 0 ? 0 : (0xffffffff << (32 - i)) >>> 0;
        return `${[24, 16, 8, 0].map((shift) => (start >>> shift) & 255).join('.')}/${i + 1}`;
      });
      expect(covered(...allButLast).ipv4).toBe(false);
      expect(covered(...allButLast, '255.255.255.255').ipv4).toBe(true);
      expect(covered('0.0.0.0/1', '128.0.0.0/1').ipv6).toBe(false);
      expect(covered('10.0.0.0/8', '2001:db8::/32')).toEqual({ ipv4: false, ipv6: false });
    });

    it("counts each family's networks for it, and the IPv4-mapped range (checked as IPv4) as covered for IPv6", () => {
      // An IPv4 client is never checked against an IPv6 network (AddressList).
      expect(covered('::ffff:0:0/95')).toEqual({ ipv4: false, ipv6: false });
      expect(allowList('::ffff:0:0/95').allows('::ffff:192.0.2.1')).toBe(false);
      // Every IPv6 address but ::ffff:0:0/96 (which is IPv4's): 96 networks.
      const allButMapped = Array.from({ length: 96 }, (_, i) => {
        const bit = 127 - i;
        const mapped = 0xffffn << 32n;
        // The sibling at each depth of the path to ::ffff:0:0/96.
        const start = ((mapped >> BigInt(bit)) ^ 1n) << BigInt(bit);
        const hex = start.toString(16).padStart(32, '0').match(/.{4}/g)!.join(':');
        return `${hex}/${i + 1}`;
      });
      expect(covered(...allButMapped)).toEqual({ ipv4: false, ipv6: true });
    });
  });
});
