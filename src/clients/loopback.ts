import { isIP } from 'node:net';

/**
 * Whether listening on `host` reaches only this machine: `localhost`, 127.0.0.0/8, ::1 (and its
 * IPv4-mapped form). Anything else, 0.0.0.0 and :: above all, is reachable from the network.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, '$1');
  if (h === 'localhost') return true;
  if (isIP(h) === 4) return h.startsWith('127.');
  if (isIP(h) === 6) return h === '::1' || h === '0:0:0:0:0:0:0:1' || /^::ffff:127\./.test(h);
  return false;
}
