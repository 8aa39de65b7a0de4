import { DEFAULT_PORT } from '../gateway/gateway-config.js';
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
