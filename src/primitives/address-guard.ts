import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { isIP, type LookupFunction } from 'node:net';
import { Agent, buildConnector } from 'undici';
import { KiwiError } from '../base/errors.js';
import { inCidr, parseIp, type Cidr } from '../base/ip-address.js';
import { normalHostName, parseAllowEntry } from '../policy/private-allowance.js';
import { embeddedIpv4, specialRange } from './special-addresses.js';

/**
 * The SSRF guard for requests whose host someone other than the project's author chose (an
 * agent's arguments, a server's redirect): such a request may reach public addresses only,
 * unless the policy's `network.allow_private` names the host or a range holding its address.
 *
 * A name is resolved once, every address it resolves to is checked, and the socket connects to
 * exactly those addresses: the check runs inside the connection's own DNS lookup, so a name
 * whose answer changes between a check and the connect (DNS rebinding) cannot slip past it.
 * IP literals never reach a lookup, so they are checked on their own.
 */

export interface AddressGuardOptions {
  /** The policy's `network.allow_private`: host names, addresses and CIDR ranges that may be private. */
  allowPrivate?: readonly string[];
  /** Resolves a name to every address it has; default `dns.lookup` with `all`. Tests give names of their own. */
  resolve?: (hostname: string, family: number) => Promise<LookupAddress[]>;
}

export interface AddressGuard {
  /** Why the URL's host, an IP literal, may not be reached; null when it may, or when it is a name (checked as it is resolved). */
  checkLiteral(url: URL): string | null;
  /** An undici Agent (one per connect timeout) that connects only to addresses this guard accepts. */
  agent(connectTimeoutMs: number): Agent;
  close(): Promise<void>;
}

const POLICY_FILE = '.ai/config/policy.yaml';

export function createAddressGuard(options: AddressGuardOptions = {}): AddressGuard {
  const names = new Set<string>();
  const ranges: Cidr[] = [];
  for (const entry of options.allowPrivate ?? []) {
    const parsed = parseAllowEntry(entry);
    if (parsed === null) throw new KiwiError('INVALID_INPUT', `network.allow_private: ${JSON.stringify(entry)} is not a host name, an IP address or a CIDR range (e.g. "10.0.0.0/8")`);
    if ('name' in parsed) names.add(parsed.name);
    else ranges.push(parsed.cidr);
  }
  const resolve = options.resolve ?? defaultResolve;
  const agents = new Map<number, Agent>();

  function allowedAddress(bytes: Uint8Array): boolean {
    const inner = embeddedIpv4(bytes)?.bytes;
    return ranges.some((r) => inCidr(bytes, r) || (inner !== undefined && inCidr(inner, r)));
  }

  /** Why `host` (whose addresses are `addresses`) may not be reached; null when it may. */
  function refusal(host: string, addresses: readonly string[]): string | null {
    if (names.has(normalHostName(host))) return null;
    for (const address of addresses) {
      const bytes = parseIp(address);
      if (bytes === null) return `${host} resolved to ${JSON.stringify(address)}, which is not an IP address`;
      const special = specialRange(bytes);
      if (special === null || allowedAddress(bytes)) continue;
      const what = `${special.embedded === undefined ? '' : `${special.embedded}, `}a ${special.kind} address (${special.range})`;
      const found = isIP(host) === 0 ? `${host} resolves to ${address}, ${what}` : `${address} is ${what}`;
      const entry = isIP(host) === 0 ? normalHostName(host) : address;
      return (
        `${found}; a host that a call's arguments or a redirect chose may only be a public address. ` +
        `If tools may reach it, add "${entry}" (or the range "${special.range}") to network.allow_private in ${POLICY_FILE}`
      );
    }
    return null;
  }

  /** The refusal for an IP-literal host (with or without brackets); null for a name, which is checked as it resolves. */
  function literalRefusal(hostname: string): string | null {
    const host = hostname.replace(/^\[(.*)\]$/, '$1');
    return isIP(host) === 0 ? null : refusal(host, [host]);
  }

  function denied(host: string, reason: string, address?: string): KiwiError {
    return new KiwiError('POLICY_DENIED', reason, { details: { host, ...(address === undefined ? {} : { address }), allow: 'network.allow_private' } });
  }

  const checkedLookup: LookupFunction = (hostname, lookupOptions, callback) => {
    resolve(hostname, lookupOptions.family === 'IPv4' ? 4 : lookupOptions.family === 'IPv6' ? 6 : Number(lookupOptions.family ?? 0)).then(
      (addresses) => {
        const reason = addresses.length === 0 ? `${hostname} resolved to no address` : refusal(hostname, addresses.map((a) => a.address));
        if (reason !== null) return callback(denied(hostname, reason, addresses[0]?.address), '', 0);
        // Exactly the addresses checked above: the socket connects to these and resolves nothing itself.
        if (lookupOptions.all === true) return (callback as unknown as (e: null, a: LookupAddress[]) => void)(null, addresses);
        const first = addresses[0] as LookupAddress;
        return callback(null, first.address, first.family);
      },
      (error: NodeJS.ErrnoException) => callback(error, '', 0),
    );
  };

  function connector(timeout: number): buildConnector.connector {
    const connect = buildConnector({ timeout, lookup: checkedLookup });
    return (opts, callback) => {
      const reason = literalRefusal(opts.hostname);
      if (reason !== null) {
        queueMicrotask(() => callback(denied(opts.hostname, reason, opts.hostname), null));
        return;
      }
      connect(opts, callback);
    };
  }

  return {
    checkLiteral: (url) => literalRefusal(url.hostname),
    agent(connectTimeoutMs) {
      let agent = agents.get(connectTimeoutMs);
      if (agent === undefined) {
        agent = new Agent({ connect: connector(connectTimeoutMs) });
        agents.set(connectTimeoutMs, agent);
      }
      return agent;
    },
    async close() {
      const all = [...agents.values()];
      agents.clear();
      await Promise.all(all.map((a) => a.close()));
    },
  };
}

function defaultResolve(hostname: string, family: number): Promise<LookupAddress[]> {
  return new Promise((resolve, reject) => {
    dnsLookup(hostname, { all: true, family, order: 'verbatim' }, (error, addresses) => (error ? reject(error) : resolve(addresses)));
  });
}
