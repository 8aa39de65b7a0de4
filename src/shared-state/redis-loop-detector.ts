import { createHash, randomUUID } from 'node:crypto';
import { DEFAULT_LOOP_THRESHOLD, DEFAULT_LOOP_WINDOW_MS, loopCallKey, MAX_LOOP_STAMPS, type LoopDetector } from '../audit/loop-detector.js';
import { redisFailure, type Redis } from './redis-client.js';
import { LUA_NOW } from './redis-leases.js';
import { redisScript, runScript } from './redis-script.js';

/**
 * audit/loop-detector.ts in Redis: identical calls of one client counted across replicas, so an
 * agent repeating itself is flagged even when its calls land on different replicas. One sorted
 * set per (client, call) of the times it was made, on Redis's clock; it expires a window after
 * the last call.
 */
const OBSERVE = redisScript(`
${LUA_NOW}
local window = tonumber(ARGV[1])
local most = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
redis.call('ZADD', KEYS[1], now, ARGV[2])
local n = redis.call('ZCARD', KEYS[1])
if n > most then
  redis.call('ZREMRANGEBYRANK', KEYS[1], 0, n - most - 1)
  n = most
end
redis.call('PEXPIRE', KEYS[1], window)
return n
`);

export function createRedisLoopDetector(redis: Redis, options: { url: string; prefix: string; threshold?: number; windowMs?: number }): LoopDetector {
  const threshold = options.threshold ?? DEFAULT_LOOP_THRESHOLD;
  const windowMs = options.windowMs ?? DEFAULT_LOOP_WINDOW_MS;
  return {
    async observe(sessionId, toolId, args) {
      const call = loopCallKey(sessionId, toolId, args);
      if (call === undefined) return { stuck: false, count: 1 };
      const key = `${options.prefix}loop:${createHash('sha256').update(JSON.stringify([sessionId, call])).digest('base64url').slice(0, 32)}`;
      let count: number;
      try {
        count = Number(await runScript(redis, OBSERVE, [key], [String(windowMs), randomUUID(), String(MAX_LOOP_STAMPS)]));
      } catch (error) {
        throw redisFailure(options.url, 'a loop check', error);
      }
      return { stuck: count >= threshold, count };
    },
  };
}
