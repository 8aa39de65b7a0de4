import { inCidr, parseCidr, type Cidr } from '../base/ip-address.js';

/**
 * The addresses an outbound request steered by someone other than the project's author must not
 * reach: everything that is not a plain public unicast address (the IANA special-purpose
 * registries), cloud metadata endpoints named first so the message says what they are. IPv6
 * forms that carry an IPv4 address (IPv4-mapped, NAT64, 6to4) are judged by that IPv4 address.
 */

export interface SpecialRange {
  /** The range it falls in, e.g. `127.0.0.0/8`. */
  range: string;
  /** What the range is, e.g. `loopback`. */
  kind: string;
  /** Set when the address is an IPv6 form of this IPv4 address. */
  embedded?: string;
}

const table = (rows: Array<[string, string]>): Array<{ cidr: Cidr; kind: string }> =>
  rows.map(([text, kind]) => ({ cidr: parseCidr(text) as Cidr, kind }));

const IPV4 = table([
  ['169.254.169.254/32', 'cloud metadata'],
  ['100.100.100.200/32', 'cloud metadata'],
  ['0.0.0.0/8', 'unspecified ("this network")'],
  ['10.0.0.0/8', 'private'],
  ['100.64.0.0/10', 'carrier-grade NAT (shared)'],
  ['127.0.0.0/8', 'loopback'],
  ['169.254.0.0/16', 'link-local'],
  ['172.16.0.0/12', 'private'],
  ['192.0.0.0/24', 'IETF protocol assignment'],
  ['192.0.2.0/24', 'documentation'],
  ['192.88.99.0/24', '6to4 relay'],
  ['192.168.0.0/16', 'private'],
  ['198.18.0.0/15', 'benchmarking'],
  ['198.51.100.0/24', 'documentation'],
  ['203.0.113.0/24', 'documentation'],
  ['224.0.0.0/4', 'multicast'],
  ['240.0.0.0/4', 'reserved (and broadcast)'],
]);

const IPV6 = table([
  ['fd00:ec2::254/128', 'cloud metadata'],
  ['::/128', 'unspecified'],
  ['::1/128', 'loopback'],
  // After the IPv4-mapped range is taken out: IPv4-compatible and other deprecated forms.
  ['::/8', 'reserved'],
  ['64:ff9b:1::/48', 'local-use NAT64'],
  ['100::/64', 'discard-only'],
  ['2001::/23', 'IETF protocol assignment (Teredo among them)'],
  ['2001:db8::/32', 'documentation'],
  ['3fff::/20', 'documentation'],
  ['fc00::/7', 'unique local (private)'],
  ['fe80::/10', 'link-local'],
  ['fec0::/10', 'site-local (deprecated)'],
  ['ff00::/8', 'multicast'],
]);

const EMBEDDING = [
  { cidr: parseCidr('::ffff:0:0/96') as Cidr, at: 12, form: 'IPv4-mapped IPv6' },
  { cidr: parseCidr('64:ff9b::/96') as Cidr, at: 12, form: 'NAT64' },
  { cidr: parseCidr('2002::/16') as Cidr, at: 2, form: '6to4' },
];

/** The IPv4 address an IPv6 address stands for, if it is one of the forms that carry one. */
export function embeddedIpv4(address: Uint8Array): { bytes: Uint8Array; form: string } | null {
  if (address.length !== 16) return null;
  for (const e of EMBEDDING) if (inCidr(address, e.cidr)) return { bytes: address.slice(e.at, e.at + 4), form: e.form };
  return null;
}

/** Which special range the address is in; null for a public unicast address. */
export function specialRange(address: Uint8Array): SpecialRange | null {
  const inner = embeddedIpv4(address);
  if (inner !== null) {
    const found = specialRange(inner.bytes);
    return found === null ? null : { ...found, embedded: `${inner.bytes.join('.')} (${inner.form})` };
  }
  const rows = address.length === 4 ? IPV4 : IPV6;
  const row = rows.find((r) => inCidr(address, r.cidr));
  return row === undefined ? null : { range: row.cidr.text, kind: row.kind };
}
