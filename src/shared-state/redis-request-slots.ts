import { randomUUID } from 'node:crypto';
import type { RequestSlots } from '../clients/request-slots.js';
import { redisFailure, type Redis } from './redis-client.js';
import { redisScript, runScript } from './redis-script.js';

/**
 * clients/request-slots.ts in Redis: a client's running requests across every replica. Each is a
 * lease in the client's sorted set, scored by when it lapses. The replica that holds a lease
 * renews it every `ttlMs / 3` while the request runs, so a replica that dies (SIGKILL, a lost
 * machine) gives its clients' slots back within `ttlMs` instead of holding them for good.
 * Taking counts only live leases, and adds one only under the cap, in one script.
 */
const ACQUIRE = redisScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local running = redis.call('ZCARD', KEYS[1])
if running >= tonumber(ARGV[1]) then return running end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return -1
`);

/** Moves the leases named (those still there) to lapse `ttlMs` from now. */
const RENEW = redisScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
for i = 2, #ARGV do redis.call('ZADD', KEYS[1], 'XX', now + tonumber(ARGV[1]), ARGV[i]) end
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]))
return 0
`);

export const DEFAULT_SLOT_TTL_MS = 30_000;

export interface RedisRequestSlots extends RequestSlots {
  /** Stops renewing (the leases lapse within their TTL unless released first). */
  close(): void;
}

export function createRedisRequestSlots(redis: Redis, options: { url: string; prefix: string; ttlMs?: number }): RedisRequestSlots {
  const ttlMs = options.ttlMs ?? DEFAULT_SLOT_TTL_MS;
  const keyOf = (client: string): string => `${options.prefix}slots:${client}`;
  /** Leases this process holds, by client. */
  const live = new Map<string, Set<string>>();

  const renew = async (): Promise<void> => {
    // A renewal that fails is tried again at the next tick; a lease lapses only after three misses.
    await Promise.allSettled([...live].map(([client, ids]) => runScript(redis, RENEW, [keyOf(client)], [String(ttlMs), ...ids])));
  };
  const timer = setInterval(() => void renew(), Math.max(10, Math.floor(ttlMs / 3)));
  timer.unref();

  return {
    async acquire(client, max) {
      const id = randomUUID();
      let reply: unknown;
      try {
        reply = await runScript(redis, ACQUIRE, [keyOf(client)], [String(max), id, String(ttlMs)]);
      } catch (error) {
        throw redisFailure(options.url, 'a concurrency check', error);
      }
      if (reply !== -1) return { ok: false, running: Number(reply) };
      const ids = live.get(client) ?? new Set<string>();
      live.set(client, ids.add(id));
      let released = false;
      return {
        ok: true,
        release() {
          if (released) return;
          released = true;
          ids.delete(id);
          if (ids.size === 0) live.delete(client);
          // If this fails (Redis away), the lease is no longer renewed and lapses within ttlMs.
          redis.zRem(keyOf(client), id).catch(() => undefined);
        },
      };
    },
    held: () => Object.fromEntries([...live].map(([client, ids]) => [client, ids.size])),
    close: () => clearInterval(timer),
  };
}
