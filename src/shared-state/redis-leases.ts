import type { Redis } from './redis-client.js';
import { redisScript, runScript } from './redis-script.js';

/**
 * Leases this process holds in Redis: members of sorted sets scored by when they lapse. While
 * held, they are renewed every `ttlMs / 3`, so a lease outlives any request that holds it, and a
 * process that dies (SIGKILL, a lost machine) lets its leases lapse within `ttlMs` instead of
 * holding them for good. A renewal that fails is tried at the next tick; a lease lapses only
 * after three missed in a row. A key may have a companion (a hash of the leases' amounts) that
 * lives as long as it does.
 */

/** Moves the leases named (those still there) to lapse `ttlMs` from now, and keeps the keys as long. */
const RENEW = redisScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local ttl = tonumber(ARGV[1])
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + ttl, ARGV[i]) end
for i = 1, #KEYS do redis.call('PEXPIRE', KEYS[i], ttl) end
return 0
`);

/** Redis's own time in ms, for scripts that score leases (every replica then agrees on "now"). */
export const LUA_NOW = `local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)`;

export const DEFAULT_LEASE_TTL_MS = 30_000;

export interface Leases {
  readonly ttlMs: number;
  /** Renewed until released, or until `maxAgeMs` from now has passed (a hold nobody released must lapse all the same). */
  add(key: string, id: string, maxAgeMs?: number): void;
  /** Stops renewing it (the caller removes it from Redis). */
  remove(key: string, id: string): void;
  /** Leases held now, per key. */
  count(): Map<string, number>;
  /** Stops renewing all of them. */
  close(): void;
}

export function createLeases(redis: Redis, options: { ttlMs?: number; companion?: (key: string) => string } = {}): Leases {
  const ttlMs = options.ttlMs ?? DEFAULT_LEASE_TTL_MS;
  /** Key → lease id → when to stop renewing it. */
  const live = new Map<string, Map<string, number>>();
  const renew = (): void => {
    const at = Date.now();
    for (const [key, ids] of live) {
      for (const [id, until] of ids) if (until <= at) ids.delete(id);
      if (ids.size === 0) {
        live.delete(key);
        continue;
      }
      const keys = options.companion ? [key, options.companion(key)] : [key];
      runScript(redis, RENEW, keys, [String(ttlMs), ...ids.keys()]).catch(() => undefined);
    }
  };
  const timer = setInterval(renew, Math.max(10, Math.floor(ttlMs / 3)));
  timer.unref();
  return {
    ttlMs,
    add(key, id, maxAgeMs = Infinity) {
      const ids = live.get(key) ?? new Map<string, number>();
      live.set(key, ids.set(id, Date.now() + maxAgeMs));
    },
    remove(key, id) {
      const ids = live.get(key);
      ids?.delete(id);
      if (ids?.size === 0) live.delete(key);
    },
    count: () => new Map([...live].map(([key, ids]) => [key, ids.size])),
    close: () => clearInterval(timer),
  };
}
