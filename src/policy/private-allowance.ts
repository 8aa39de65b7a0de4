import { isIP } from 'node:net';
import { parseCidr, type Cidr } from '../base/ip-address.js';

/** The entries of the policy's `network.allow_private`, read the same way by the policy file and the address guard. */

/** A host name as the policy and the URL parser may both write it: lower case, no trailing dot. */
export function normalHostName(name: string): string {
  return name.toLowerCase().replace(/\.$/, '');
}

const HOST_NAME = /^(?=.{1,253}$)[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?(\.[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?)*$/;

/** An address or CIDR range (`10.0.0.0/8`, `fd00::/8`, `10.1.2.3`), or an exact host name; null when it is none of them. */
export function parseAllowEntry(entry: string): { cidr: Cidr } | { name: string } | null {
  const cidr = parseCidr(entry);
  if (cidr !== null) return { cidr };
  if (entry.includes('/') || isIP(entry) !== 0) return null;
  const name = normalHostName(entry);
  // A last label that is a number makes the URL parser read the host as an IPv4 address (`2130706433`, `127.1`): write that address instead.
  if (/(^|\.)(\d+|0x[0-9a-f]*)$/.test(name)) return null;
  return HOST_NAME.test(name) ? { name } : null;
}
