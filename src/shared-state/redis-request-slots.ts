import { randomUUID } from 'node:crypto';
import { takenSlot, type RequestSlots } from '../clients/request-slots.js';
import { redisFailure, type Redis } from './redis-client.js';
import { createLeases, LUA_NOW } from './redis-leases.js';
import { redisScript, runScript } from './redis-script.js';

/**
 * clients/request-slots.ts in Redis: a client's running requests across every replica, each a
 * lease (redis-leases.ts) in the client's sorted set. Taking counts only live leases, and adds
 * one only under the cap, in one script.
 */
const ACQUIRE = redisScript(`
${LUA_NOW}
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local running = redis.call('ZCARD', KEYS[1])
if running >= tonumber(ARGV[1]) then return running end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[3]), ARGV[2])
redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[3]))
return -1
`);

export interface RedisRequestSlots extends RequestSlots {
  /** Stops renewing (the leases lapse within their TTL unless released first). */
  close(): void;
}

export function createRedisRequestSlots(redis: Redis, options: { url: string; prefix: string; ttlMs?: number }): RedisRequestSlots {
  const key = (client: string): string => `${options.prefix}slots:${client}`;
  const leases = createLeases(redis, options.ttlMs === undefined ? {} : { ttlMs: options.ttlMs });
  return {
    async acquire(client, max) {
      const id = randomUUID();
      let reply: unknown;
      try {
        reply = await runScript(redis, ACQUIRE, [key(client)], [String(max), id, String(leases.ttlMs)]);
      } catch (error) {
        throw redisFailure(options.url, 'a concurrency check', error);
      }
      if (reply !== -1) return { ok: false, running: Number(reply) };
      leases.add(key(client), id);
      return takenSlot(async () => {
        leases.remove(key(client), id);
        // If this fails (Redis away), the lease is no longer renewed and lapses within its TTL.
        await redis.zRem(key(client), id).catch(() => undefined);
      });
    },
    held: () => Object.fromEntries([...leases.count()].map(([k, n]) => [k.slice(`${options.prefix}slots:`.length), n])),
    close: () => leases.close(),
  };
}
