import type { Socket } from 'node:net';
import { clientAddress, clientNetwork, isClientAddress, MAX_ADDRESS_LENGTH } from './client-address';

describe('clientAddress', () => {
  const request = (ip: string | undefined, remoteAddress: string | undefined = '198.51.100.4') => ({
    ip,
    socket: { remoteAddress } as Socket,
  });

  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['2001:db8::1', '2001:db8::1'],
    ['::ffff:203.0.113.7', '::ffff:203.0.113.7'],
    ['ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255', 'ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255'],
  ])('keeps req.ip %s, an address', (ip, expected) => {
    expect(clientAddress(request(ip))).toBe(expected);
  });

  it.each([
    ['garbage', 'garbage'],
    ['an empty value', ''],
    ['a very long value', `203.0.113.7${' '.repeat(4000)}x`],
    ['markup', '<script>alert(1)</script>'],
    ['an address with a port', '203.0.113.7:443'],
    ['an IPv6 address with a zone id longer than an address', `fe80::1%${'a'.repeat(60)}`],
    ['nothing', undefined],
  ])('uses the socket address when req.ip is %s', (_what, ip) => {
    expect(clientAddress(request(ip))).toBe('198.51.100.4');
  });

  it('is undefined when neither is an address', () => {
    expect(clientAddress({ ip: 'garbage', socket: {} as Socket })).toBeUndefined();
    expect(clientAddress(request('garbage', 'x'.repeat(100)))).toBeUndefined();
  });

  it('never returns anything longer than an IPv6 address', () => {
    expect(MAX_ADDRESS_LENGTH).toBe('ffff:ffff:ffff:ffff:ffff:ffff:255.255.255.255'.length);
    expect(isClientAddress('1'.repeat(46))).toBe(false);
    expect(isClientAddress(null)).toBe(false);
  });
});

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
    ['not an address', 'unknown'],
    ['::ffff:999.1.1.1', 'unknown'],
  ])('%s -> %s', (address, expected) => {
    expect(clientNetwork(address)).toBe(expected);
  });

  it('puts every address of one /64 under one counter, and other /64s under others', () => {
    expect(clientNetwork('2001:db8:1:2:ffff::9')).toBe(clientNetwork('2001:db8:1:2::1'));
    expect(clientNetwork('2001:db8:1:3::1')).not.toBe(clientNetwork('2001:db8:1:2::1'));
  });
});
