import { KiwiError } from '../base/errors.js';

/** Where `kiwi serve` listens when the environment says: KIWI_HOST and KIWI_PORT win over gateway.yaml. */

type Env = Readonly<Record<string, string | undefined>>;

/** A host name or IP address as gateway.yaml's `host` and KIWI_HOST take it. */
export const HOST = /^[A-Za-z0-9.:%_-]{1,253}$/;

export function envHost(env: Env): string | undefined {
  const v = env.KIWI_HOST?.trim();
  if (v === undefined || v === '') return undefined;
  if (!HOST.test(v)) throw new KiwiError('INVALID_INPUT', `environment variable KIWI_HOST=${JSON.stringify(v.slice(0, 80))} is not a host name or IP address; set e.g. 127.0.0.1 or 0.0.0.0`);
  return v;
}

export function envPort(env: Env): number | undefined {
  const v = env.KIWI_PORT?.trim();
  if (v === undefined || v === '') return undefined;
  const n = /^\d{1,5}$/.test(v) ? Number(v) : NaN;
  if (!(n >= 0 && n <= 65535)) throw new KiwiError('INVALID_INPUT', `environment variable KIWI_PORT=${JSON.stringify(v.slice(0, 80))} is not a port; set a whole number from 0 to 65535, e.g. 8787`);
  return n;
}
