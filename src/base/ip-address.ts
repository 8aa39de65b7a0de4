import { isIPv4, isIPv6 } from 'node:net';

/**
 * IP addresses as bytes (4 for IPv4, 16 for IPv6) and CIDR ranges over them. Only the canonical
 * textual forms are read here (what DNS answers and what the WHATWG URL parser leaves in a host);
 * the URL parser has already turned `2130706433`, `0177.0.0.1` and `127.1` into `127.0.0.1`.
 */

export interface Cidr {
  bytes: Uint8Array;
  prefix: number;
  /** As written, for messages. */
  text: string;
}

/** The address's bytes, or null when `text` is not an IP address (a zone id `%eth0` is dropped). */
export function parseIp(text: string): Uint8Array | null {
  const bare = text.startsWith('[') && text.endsWith(']') ? text.slice(1, -1) : text;
  if (isIPv4(bare)) return Uint8Array.from(bare.split('.').map(Number));
  const zone = bare.indexOf('%');
  const address = zone === -1 ? bare : bare.slice(0, zone);
  return isIPv6(address) ? parseIpv6(address) : null;
}

function parseIpv6(text: string): Uint8Array {
  // A trailing dotted quad (`::ffff:127.0.0.1`) becomes two hex groups.
  const quad = /(\d+)\.(\d+)\.(\d+)\.(\d+)$/.exec(text);
  const hex = quad === null ? text : `${text.slice(0, quad.index)}${((Number(quad[1]) << 8) | Number(quad[2])).toString(16)}:${((Number(quad[3]) << 8) | Number(quad[4])).toString(16)}`;
  const [head = '', tail] = hex.split('::');
  const groups = (part: string) => (part === '' ? [] : part.split(':').map((g) => parseInt(g, 16)));
  const left = groups(head);
  const right = tail === undefined ? [] : groups(tail);
  const all = [...left, ...new Array<number>(8 - left.length - right.length).fill(0), ...right];
  const bytes = new Uint8Array(16);
  all.forEach((group, i) => {
    bytes[2 * i] = group >> 8;
    bytes[2 * i + 1] = group & 0xff;
  });
  return bytes;
}

/** `10.0.0.0/8`, `fc00::/7`, or one address (a /32 or /128); null when it is neither. */
export function parseCidr(text: string): Cidr | null {
  const slash = text.indexOf('/');
  const bytes = parseIp(slash === -1 ? text : text.slice(0, slash));
  if (bytes === null || text.includes('%')) return null;
  const bits = bytes.length * 8;
  if (slash === -1) return { bytes, prefix: bits, text };
  const prefixText = text.slice(slash + 1);
  const prefix = Number(prefixText);
  if (!/^\d{1,3}$/.test(prefixText) || prefix > bits) return null;
  return { bytes, prefix, text };
}

export function inCidr(address: Uint8Array, range: Cidr): boolean {
  if (address.length !== range.bytes.length) return false;
  for (let bit = 0; bit < range.prefix; bit += 8) {
    const mask = range.prefix - bit >= 8 ? 0xff : (0xff << (8 - (range.prefix - bit))) & 0xff;
    if (((address[bit / 8] as number) & mask) !== ((range.bytes[bit / 8] as number) & mask)) return false;
  }
  return true;
}
