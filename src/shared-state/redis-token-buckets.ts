import { createHash } from 'node:crypto';
import type { TokenBuckets } from '../policy/token-buckets.js';
import { redisFailure, type Redis } from './redis-client.js';
import { redisScript, runScript } from './redis-script.js';

/**
 * policy/token-buckets.ts in Redis, for rate limits that replicas share: the same refill, the
 * same all-or-none take, in one script, so two replicas taking at once cannot both spend the
 * last token. Time is Redis's own (TIME), so replicas whose clocks disagree still agree on the
 * buckets. A bucket is a hash {tokens, updated}; it expires once it would be full again (an idle
 * bucket refills to full, so losing it loses nothing), which keeps Redis from filling with
 * buckets of clients long gone. Keys are hashed: a bucket's name holds paths and labels.
 *
 * Returns {0, 0} when taken, else {index of the first empty bucket (1-based), ms until it holds a token}.
 */
const TAKE = redisScript(`
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + tonumber(t[2]) / 1000
local state = {}
for i = 1, #KEYS do
  local max = tonumber(ARGV[2 * i - 1])
  local per = tonumber(ARGV[2 * i])
  local saved = redis.call('HMGET', KEYS[i], 'tokens', 'updated')
  local tokens = tonumber(saved[1]) or max
  local updated = tonumber(saved[2]) or now
  if now > updated then
    tokens = math.min(max, tokens + (now - updated) * max / per)
    updated = now
  end
  if tokens < 1 - 1e-9 then
    return {i, math.max(1, math.ceil((1 - tokens) * per / max))}
  end
  state[i] = {tokens - 1, updated, per}
end
for i = 1, #KEYS do
  local s = state[i]
  redis.call('HSET', KEYS[i], 'tokens', string.format('%.17g', math.max(0, s[1])), 'updated', string.format('%.17g', s[2]))
  redis.call('PEXPIRE', KEYS[i], math.ceil(s[3]))
end
return {0, 0}
`);

export function createRedisTokenBuckets(redis: Redis, options: { url: string; prefix: string }): TokenBuckets {
  const keyOf = (key: string): string => `${options.prefix}bucket:${createHash('sha256').update(key).digest('base64url').slice(0, 32)}`;
  return {
    async take(needs) {
      if (needs.length === 0) return { ok: true };
      let reply: unknown;
      try {
        reply = await runScript(
          redis,
          TAKE,
          needs.map((n) => keyOf(n.key)),
          needs.flatMap((n) => [String(n.max), String(n.perMs)]),
        );
      } catch (error) {
        throw redisFailure(options.url, 'a rate limit check', error);
      }
      const [empty, retryMs] = reply as [number, number];
      return empty === 0 ? { ok: true } : { ok: false, empty: empty - 1, retryMs };
    },
  };
}
