import { DEFAULT_PORT } from '../http/server/listen-limits.js';
import { UsageError, type CliContext } from './io.js';

/**
 * Where the commands that talk to a running gateway (`kiwi stats`, `kiwi chat`) look for it
 * when no --url is given: this machine, on the port `kiwi serve` would take from KIWI_PORT.
 */
export function defaultGatewayBase(env: CliContext['env']): string {
  const port = env['KIWI_PORT']?.trim();
  if (port === undefined || port === '') return `http://127.0.0.1:${DEFAULT_PORT}`;
  if (!/^\d{1,5}$/.test(port) || Number(port) < 1 || Number(port) > 65535) {
    throw new UsageError(`KIWI_PORT=${JSON.stringify(port.slice(0, 40))} is not a port; set a whole number from 1 to 65535, or pass --url`);
  }
  return `http://127.0.0.1:${Number(port)}`;
}

/**
 * A running gateway's address as --url (or `flag`) gives it: http(s) only, no user name or
 * password (a client key travels in a header), query and fragment dropped. `keyHint` says where
 * the key goes.
 */
export function gatewayUrl(base: string, keyHint = '', flag = '--url'): URL {
  let url: URL;
  try {
    url = new URL(base);
  } catch {
    throw new UsageError(`${flag} ${JSON.stringify(base.slice(0, 200))} is not a URL; pass the gateway's address, e.g. http://127.0.0.1:${DEFAULT_PORT}`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new UsageError(`${flag} must be http:// or https://, got ${url.protocol}`);
  if (url.username || url.password) throw new UsageError(`${flag} must not carry a user name or password${keyHint}`);
  url.search = '';
  url.hash = '';
  return url;
}

/** A client key as --key or KIWI_API_KEY (or `from`) gives it; undefined when none. */
export function clientKey(raw: string | undefined, from = '--key or KIWI_API_KEY'): string | undefined {
  const key = raw?.trim();
  if (key === undefined || key === '') return undefined;
  if (!/^[\x21-\x7e]{1,512}$/.test(key)) throw new UsageError(`the client key (${from}) must be one word of visible ASCII characters, at most 512; copy it as \`kiwi keys create\` printed it`);
  return key;
}
