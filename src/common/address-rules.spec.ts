import { addressKind, AddressKind, ipv6Bytes, mayConnectTo, outboundUrlProblem } from './address-rules';
import { AddressList, parseCidr } from './cidr';

describe('outbound address rules', () => {
  const cases: Array<[string, AddressKind]> = [
    // IPv4: every range that is not public unicast, at its edges.
    ['0.0.0.0', 'unspecified'],
    ['0.255.255.255', 'unspecified'],
    ['10.0.0.1', 'private'],
    ['10.255.255.255', 'private'],
    ['100.64.0.1', 'private'],
    ['100.127.255.255', 'private'],
    ['127.0.0.1', 'loopback'],
    ['127.255.255.254', 'loopback'],
    ['169.254.169.254', 'link-local'],
    ['172.16.0.1', 'private'],
    ['172.31.255.255', 'private'],
    ['192.0.0.8', 'reserved'],
    ['192.0.2.1', 'reserved'],
    ['192.88.99.1', 'reserved'],
    ['192.168.1.1', 'private'],
    ['198.18.0.1', 'reserved'],
    ['198.19.255.255', 'reserved'],
    ['198.51.100.7', 'reserved'],
    ['203.0.113.9', 'reserved'],
    ['224.0.0.1', 'multicast'],
    ['239.255.255.250', 'multicast'],
    ['240.0.0.1', 'reserved'],
    ['255.255.255.255', 'reserved'],
    // Public neighbours of those ranges.
    ['9.255.255.255', 'public'],
    ['11.0.0.0', 'public'],
    ['100.63.255.255', 'public'],
    ['100.128.0.0', 'public'],
    ['172.15.255.255', 'public'],
    ['172.32.0.0', 'public'],
    ['192.169.0.1', 'public'],
    ['198.20.0.0', 'public'],
    ['223.255.255.255', 'public'],
    ['8.8.8.8', 'public'],
    ['1.1.1.1', 'public'],
    // IPv6.
    ['::', 'unspecified'],
    ['::1', 'loopback'],
    ['[::1]', 'loopback'],
    ['0:0:0:0:0:0:0:1', 'loopback'],
    ['fc00::1', 'private'],
    ['fdff:ffff::1', 'private'],
    ['fe80::1', 'link-local'],
    ['fe80::1%eth0', 'link-local'],
    ['febf::1', 'link-local'],
    ['fec0::1', 'private'],
    ['ff02::1', 'multicast'],
    ['ff0e::1', 'multicast'],
    ['2001:db8::1', 'reserved'],
    ['2001::1', 'reserved'],
    ['3fff::1', 'reserved'],
    ['100::1', 'reserved'],
    ['::2', 'reserved'],
    ['4000::1', 'reserved'],
    ['64:ff9b:1::1', 'private'],
    ['2606:4700:4700::1111', 'public'],
    ['2a00:1450:4001:80b::200e', 'public'],
    // IPv6 carrying IPv4: judged by the IPv4 address.
    ['::ffff:127.0.0.1', 'loopback'],
    ['::ffff:7f00:1', 'loopback'],
    ['[::ffff:7f00:1]', 'loopback'],
    ['::ffff:10.0.0.1', 'private'],
    ['::ffff:169.254.169.254', 'link-local'],
    ['::ffff:0.0.0.0', 'unspecified'],
    ['::ffff:8.8.8.8', 'public'],
    ['::ffff:0:10.0.0.1', 'private'],
    ['::127.0.0.1', 'loopback'],
    ['::10.1.2.3', 'private'],
    ['64:ff9b::10.0.0.1', 'private'],
    ['64:ff9b::a9fe:a9fe', 'link-local'],
    ['64:ff9b::8.8.8.8', 'public'],
    ['2002:7f00:1::', 'loopback'],
    ['2002:c0a8:101::1', 'private'],
    ['2002:808:808::1', 'public'],
  ];

  it.each(cases)('%s is %s', (address, kind) => {
    expect(addressKind(address)).toBe(kind);
  });

  it('is undefined for what is not an IP address', () => {
    for (const host of ['example.com', 'localhost', '', '1.2.3', '::g', '127.1'])
      expect(addressKind(host)).toBeUndefined();
  });

  it('reads every IPv6 form into 16 bytes', () => {
    expect(ipv6Bytes('::')).toEqual(new Array(16).fill(0));
    expect(ipv6Bytes('1::')).toEqual([0, 1, ...new Array(14).fill(0)]);
    expect(ipv6Bytes('::ffff:1.2.3.4')).toEqual([...new Array(10).fill(0), 0xff, 0xff, 1, 2, 3, 4]);
    expect(ipv6Bytes('2001:db8:0:0:1:0:0:1')).toEqual([0x20, 0x01, 0x0d, 0xb8, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1]);
  });

  it('allows public addresses, and loopback only outside production', () => {
    expect(mayConnectTo('8.8.8.8', false)).toBe(true);
    expect(mayConnectTo('2606:4700:4700::1111', false)).toBe(true);
    expect(mayConnectTo('127.0.0.1', false)).toBe(false);
    expect(mayConnectTo('127.0.0.1', true)).toBe(true);
    expect(mayConnectTo('::1', true)).toBe(true);
    expect(mayConnectTo('::ffff:127.0.0.1', true)).toBe(true);
    for (const address of ['10.0.0.1', '169.254.169.254', '0.0.0.0', '::', 'fe80::1', 'ff02::1', '::ffff:10.0.0.1']) {
      expect(mayConnectTo(address, true)).toBe(false);
    }
    expect(mayConnectTo('example.com', true)).toBe(false);
  });

  it('allows a private address only in the private networks an operator named, never loopback or link-local', () => {
    const networks = new AddressList([parseCidr('10.20.0.0/16')!, parseCidr('fd00:1::/64')!]);
    const everything = new AddressList([parseCidr('0.0.0.0/0')!, parseCidr('::/0')!]);
    expect(mayConnectTo('10.20.3.4', false, networks)).toBe(true);
    expect(mayConnectTo('fd00:1::5', false, networks)).toBe(true);
    expect(mayConnectTo('[fd00:1::5]', false, networks)).toBe(true);
    expect(mayConnectTo('10.21.0.1', false, networks)).toBe(false);
    expect(mayConnectTo('10.21.0.1', false)).toBe(false);
    // 0.0.0.0/0 in the list admits no loopback, link-local (cloud metadata) or reserved address.
    for (const address of ['127.0.0.1', '169.254.169.254', '0.0.0.0', '224.0.0.1', 'fe80::1', '::1']) {
      expect(mayConnectTo(address, false, everything)).toBe(false);
    }
    const url = (text: string) => outboundUrlProblem(new URL(text), true, networks);
    expect(url('https://10.20.0.9/realms/acme')).toBeNull();
    expect(url('https://[fd00:1::9]/realms/acme')).toBeNull();
    expect(url('https://10.99.0.9/realms/acme')).toBe('address');
    expect(url('http://10.20.0.9/realms/acme')).toBe('not_https');
  });
});
