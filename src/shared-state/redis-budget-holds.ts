import { randomUUID } from 'node:crypto';
import type { BudgetHolds, HeldAmount } from '../budgets/budget-holds.js';
import { redisFailure, type Redis } from './redis-client.js';
import { createLeases, LUA_NOW } from './redis-leases.js';
import { redisScript, runScript } from './redis-script.js';

/**
 * budgets/budget-holds.ts in Redis: what the running requests of a client hold of its budget,
 * across every replica, so parallel requests through several replicas still overshoot a budget
 * by at most one request's cap. A hold is a lease (redis-leases.ts) in the key's sorted set, its
 * amount (`tokens spend`) in a companion hash. `reserve` sums the live holds and adds one only if
 * they leave room, in one script.
 */

/** Drops lapsed holds, then sums the rest: the preamble of both scripts. */
const SUM_LIVE = `${LUA_NOW}
for _, id in ipairs(redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', now)) do redis.call('HDEL', KEYS[2], id) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
local tokens, spend = 0, 0
for _, id in ipairs(redis.call('ZRANGE', KEYS[1], 0, -1)) do
  local amount = redis.call('HGET', KEYS[2], id)
  if amount then
    local t, s = string.match(amount, '^(%S+) (%S+)$')
    tokens = tokens + tonumber(t)
    spend = spend + tonumber(s)
  end
end`;

/** ARGV: id, tokens, spend, room in tokens, room in spend, ttl. Returns {taken 1|0, held tokens, held spend}. */
const RESERVE = redisScript(`
${SUM_LIVE}
local held = {tostring(tokens), string.format('%.17g', spend)}
if tokens >= tonumber(ARGV[4]) or spend >= tonumber(ARGV[5]) then return {0, held[1], held[2]} end
local ttl = tonumber(ARGV[6])
redis.call('ZADD', KEYS[1], now + ttl, ARGV[1])
redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. ' ' .. ARGV[3])
redis.call('PEXPIRE', KEYS[1], ttl)
redis.call('PEXPIRE', KEYS[2], ttl)
return {1, held[1], held[2]}
`);

const HELD = redisScript(`
${SUM_LIVE}
return {tostring(tokens), string.format('%.17g', spend)}
`);

/** A hold's new amount, if it is still held. */
const SET = redisScript(`
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then redis.call('HSET', KEYS[2], ARGV[1], ARGV[2] .. ' ' .. ARGV[3]) end
return 0
`);

export interface RedisBudgetHolds extends BudgetHolds {
  /** Stops renewing (the holds lapse within their TTL unless released first). */
  close(): void;
}

/** A number Lua reads back exactly; an unlimited room as the largest finite one. */
const arg = (n: number): string => (Number.isFinite(n) ? String(n) : '1e308');

/**
 * `maxAgeMs`: a hold left by a request that never ended (a handler that crashed past its
 * `finally`) stops being renewed after this long and lapses, as budget-holds.ts's do.
 * `ttlMs`: how long a hold outlives the last renewal (a replica that died).
 */
export function createRedisBudgetHolds(redis: Redis, options: { url: string; prefix: string; maxAgeMs: number; ttlMs?: number }): RedisBudgetHolds {
  const keys = (key: string): [string, string] => [`${options.prefix}holds:${key}`, `${options.prefix}held:${key}`];
  const leases = createLeases(redis, { ...(options.ttlMs === undefined ? {} : { ttlMs: options.ttlMs }), companion: (k) => k.replace(`${options.prefix}holds:`, `${options.prefix}held:`) });
  const amountOf = (reply: unknown): HeldAmount => {
    const [tokens, spend] = (reply as unknown[]).slice(-2).map(Number);
    return { tokens: tokens ?? 0, spendUsd: spend ?? 0 };
  };
  let holding = 0;
  const waiters: (() => void)[] = [];
  return {
    async reserve(key, amount, room) {
      const id = randomUUID();
      const [zset, hash] = keys(key);
      let reply: unknown;
      try {
        reply = await runScript(redis, RESERVE, [zset, hash], [id, arg(amount.tokens), arg(amount.spendUsd), arg(room.tokens), arg(room.spendUsd), String(leases.ttlMs)]);
      } catch (error) {
        throw redisFailure(options.url, 'a budget check', error);
      }
      const held = amountOf(reply);
      if ((reply as unknown[])[0] !== 1) return { ok: false, held };
      leases.add(zset, id, options.maxAgeMs);
      holding++;
      let released = false;
      return {
        ok: true,
        hold: {
          set(next) {
            if (released) return;
            runScript(redis, SET, [zset, hash], [id, arg(next.tokens), arg(next.spendUsd)]).catch(() => undefined);
          },
          async release() {
            if (released) return;
            released = true;
            leases.remove(zset, id);
            // If this fails (Redis away), the hold is no longer renewed and lapses within its TTL.
            await Promise.all([redis.zRem(zset, id), redis.hDel(hash, id)]).catch(() => undefined);
            if (--holding === 0) for (const wake of waiters.splice(0)) wake();
          },
        },
      };
    },
    async held(key) {
      try {
        return amountOf(await runScript(redis, HELD, keys(key), []));
      } catch (error) {
        throw redisFailure(options.url, 'a budget check', error);
      }
    },
    idle: () => (holding === 0 ? Promise.resolve() : new Promise((resolve) => waiters.push(resolve))),
    close: () => leases.close(),
  };
}
