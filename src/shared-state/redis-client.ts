import { createClient } from '@redis/client';
import { KiwiError } from '../base/errors.js';

/**
 * The one Redis connection a gateway process shares its state through. A command fails at once
 * while the connection is down (no offline queue) and after `COMMAND_TIMEOUT_MS` when Redis
 * does not answer: a limit that cannot be checked refuses the request, promptly, rather than
 * holding it until Redis is back. The client reconnects by itself meanwhile.
 */
const CONNECT_TIMEOUT_MS = 5_000;
const COMMAND_TIMEOUT_MS = 2_000;

/** `connected()` false: the first connection failed, which ends connect() with its cause rather than retrying for ever. */
function newClient(url: string, connected: () => boolean) {
  return createClient({
    url,
    disableOfflineQueue: true,
    commandOptions: { timeout: COMMAND_TIMEOUT_MS },
    socket: { connectTimeout: CONNECT_TIMEOUT_MS, reconnectStrategy: (retries, cause) => (connected() ? Math.min(50 * 2 ** retries, 2_000) : cause) },
  });
}

export type Redis = ReturnType<typeof newClient>;

/** The URL with its password masked, for messages and logs. */
export function shownRedisUrl(url: string): string {
  try {
    const parsed = new URL(url);
    if (parsed.password !== '') parsed.password = '***';
    return parsed.toString();
  } catch {
    return '(a REDIS_URL that is not a URL)';
  }
}

export async function connectRedis(url: string, options: { log?: (line: string) => void } = {}): Promise<Redis> {
  const shown = shownRedisUrl(url);
  if (!/^rediss?:\/\//.test(url)) throw new KiwiError('INVALID_INPUT', `REDIS_URL must start with redis:// or rediss:// (got ${shown})`);
  let ready = false;
  const client = newClient(url, () => ready);
  // Without a listener an 'error' event would end the process; once per outage is enough to say.
  let down = false;
  client.on('error', (error: Error) => {
    if (down) return;
    down = true;
    options.log?.(`redis: lost ${shown} (${error.message}); limits shared through it refuse requests until it is back`);
  });
  client.on('ready', () => {
    if (down && ready) options.log?.(`redis: ${shown} is back`);
    down = false;
  });
  try {
    await client.connect();
    ready = true;
  } catch (error) {
    client.destroy();
    throw new KiwiError('UNAVAILABLE', `cannot connect to the Redis of REDIS_URL (${shown}): ${error instanceof Error ? error.message : String(error)}; check that it runs and the URL, or unset REDIS_URL to keep limits in this process`, { cause: error });
  }
  return client;
}

/** A failed command, said so that the person reading it knows what to fix. */
export function redisFailure(url: string, what: string, error: unknown): KiwiError {
  if (error instanceof KiwiError) return error;
  return new KiwiError('UNAVAILABLE', `Redis (${shownRedisUrl(url)}) did not answer ${what}: ${error instanceof Error ? error.message : String(error)}`, { cause: error });
}
