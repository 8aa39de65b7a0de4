import { describe, expect, it } from 'vitest';
import { inCidr, parseCidr, parseIp } from '../../src/base/ip-address.js';
import { specialRange } from '../../src/primitives/special-addresses.js';

const special = (address: string) => {
  const bytes = parseIp(address);
  if (bytes === null) throw new Error(`not an address: ${address}`);
  return specialRange(bytes);
};

describe('special addresses', () => {
  it.each([
    ['127.0.0.1', 'loopback', '127.0.0.0/8'],
    ['127.255.1.2', 'loopback', '127.0.0.0/8'],
    ['0.0.0.0', 'unspecified ("this network")', '0.0.0.0/8'],
    ['10.1.2.3', 'private', '10.0.0.0/8'],
    ['172.16.0.1', 'private', '172.16.0.0/12'],
    ['172.31.255.255', 'private', '172.16.0.0/12'],
    ['192.168.1.1', 'private', '192.168.0.0/16'],
    ['169.254.169.254', 'cloud metadata', '169.254.169.254/32'],
    ['169.254.1.1', 'link-local', '169.254.0.0/16'],
    ['100.64.0.1', 'carrier-grade NAT (shared)', '100.64.0.0/10'],
    ['224.0.0.1', 'multicast', '224.0.0.0/4'],
    ['255.255.255.255', 'reserved (and broadcast)', '240.0.0.0/4'],
    ['::1', 'loopback', '::1/128'],
    ['::', 'unspecified', '::/128'],
    ['fc00::1', 'unique local (private)', 'fc00::/7'],
    ['fd12:3456::1', 'unique local (private)', 'fc00::/7'],
    ['fd00:ec2::254', 'cloud metadata', 'fd00:ec2::254/128'],
    ['fe80::1', 'link-local', 'fe80::/10'],
    ['fe80::1%eth0', 'link-local', 'fe80::/10'],
    ['ff02::1', 'multicast', 'ff00::/8'],
    ['::7f00:1', 'reserved', '::/8'],
    ['2001::1', 'IETF protocol assignment (Teredo among them)', '2001::/23'],
    ['2001:db8::1', 'documentation', '2001:db8::/32'],
  ])('%s is %s', (address, kind, range) => {
    expect(special(address)).toEqual({ kind, range });
  });

  it.each([
    ['::ffff:127.0.0.1', '127.0.0.1 (IPv4-mapped IPv6)', 'loopback'],
    ['::ffff:7f00:1', '127.0.0.1 (IPv4-mapped IPv6)', 'loopback'],
    ['0:0:0:0:0:ffff:a9fe:a9fe', '169.254.169.254 (IPv4-mapped IPv6)', 'cloud metadata'],
    ['64:ff9b::10.0.0.1', '10.0.0.1 (NAT64)', 'private'],
    ['2002:c0a8:0101::1', '192.168.1.1 (6to4)', 'private'],
  ])('%s is judged by the IPv4 address it carries', (address, embedded, kind) => {
    expect(special(address)).toMatchObject({ embedded, kind });
  });

  it.each(['8.8.8.8', '1.1.1.1', '172.32.0.1', '100.128.0.1', '2606:4700:4700::1111', '::ffff:8.8.8.8', '64:ff9b::8.8.8.8'])('%s is public', (address) => {
    expect(special(address)).toBeNull();
  });
});

describe('addresses and ranges', () => {
  it('reads canonical IPv4 and IPv6, bracketed or not, and nothing else', () => {
    expect(parseIp('[::1]')).toEqual(parseIp('0:0:0:0:0:0:0:1'));
    expect(parseIp('1.2.3.4')).toEqual(Uint8Array.from([1, 2, 3, 4]));
    for (const bad of ['localhost', '127.1', '2130706433', '0x7f.0.0.1', '1.2.3.4.5', ':::1', '']) expect(parseIp(bad), bad).toBeNull();
  });

  it('matches CIDR ranges by prefix and refuses bad ones', () => {
    const range = parseCidr('10.128.0.0/9');
    if (range === null) throw new Error('expected a range');
    expect(inCidr(parseIp('10.200.0.1') as Uint8Array, range)).toBe(true);
    expect(inCidr(parseIp('10.1.0.1') as Uint8Array, range)).toBe(false);
    expect(inCidr(parseIp('::1') as Uint8Array, range)).toBe(false);
    expect(parseCidr('fd00::/8')?.prefix).toBe(8);
    expect(parseCidr('10.0.0.1')?.prefix).toBe(32);
    for (const bad of ['10.0.0.0/33', '10.0.0.0/', '10.0.0.0/8x', 'fe80::1%eth0/64', 'example.com/8']) expect(parseCidr(bad), bad).toBeNull();
  });
});
