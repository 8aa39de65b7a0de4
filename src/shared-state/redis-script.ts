import { createHash } from 'node:crypto';
import type { Redis } from './redis-client.js';

/** A Lua script run by its SHA1, sent whole only when Redis does not have it yet (after a restart, a new server). */
export interface RedisScript {
  lua: string;
  sha: string;
}

export function redisScript(lua: string): RedisScript {
  return { lua, sha: createHash('sha1').update(lua).digest('hex') };
}

export async function runScript(redis: Redis, script: RedisScript, keys: string[], args: string[]): Promise<unknown> {
  try {
    return await redis.evalSha(script.sha, { keys, arguments: args });
  } catch (error) {
    if (!(error instanceof Error) || !error.message.startsWith('NOSCRIPT')) throw error;
    return redis.eval(script.lua, { keys, arguments: args });
  }
}
