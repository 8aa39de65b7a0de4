import { createLoopDetector, type LoopDetector } from '../audit/loop-detector.js';
import { createMemoryBudgetHolds, type BudgetHolds } from '../budgets/budget-holds.js';
import { createMemoryRequestSlots, type RequestSlots } from '../clients/request-slots.js';
import { createMemoryTokenBuckets, type TokenBuckets } from '../policy/token-buckets.js';
import type { KernelEventsBus } from '../contracts/kernel-events-bus.js';
import { NO_SHARED_CACHE, type SharedCache } from '../contracts/shared-cache.js';
import { createMemoryKernelEventsBus, createRedisKernelEventsBus } from './kernel-events-bus.js';
import { connectRedis, redisFailure, shownRedisUrl } from './redis-client.js';
import { createRedisMcpSessions, LOCAL_MCP_SESSIONS, type McpSessionDirectory } from './mcp-sessions.js';
import { createRedisBudgetHolds, type RedisBudgetHolds } from './redis-budget-holds.js';
import { createRedisLoopDetector } from './redis-loop-detector.js';
import { createRedisRequestSlots } from './redis-request-slots.js';
import { createRedisTokenBuckets } from './redis-token-buckets.js';

/**
 * What the replicas of one gateway must share that is counted or fleeting rather than stored
 * (that is Postgres's): the policy's rate limits, each client's running requests, its repeated
 * calls and what its running requests hold of its budget; word of what the kernel committed;
 * legacy MCP sessions; and the upstreams' model lists (DESIGN §7). In Redis when `REDIS_URL` is set, so any number of `kiwi
 * serve` processes act as one; otherwise in this process, which is exactly right for one gateway
 * and needs nothing installed.
 */
export interface SharedState {
  /** Where: "this process", or the Redis URL (password masked). */
  readonly where: string;
  buckets: TokenBuckets;
  slots: RequestSlots;
  loops: LoopDetector;
  /** What running requests hold of their clients' budgets; a hold nobody releases lapses after `ttlMs` here, within its lease's TTL in Redis. */
  budgetHolds(options: { ttlMs: number }): BudgetHolds;
  /** Word of the kernel's committed events, for the chats and streams waiting on them. */
  kernelEvents: KernelEventsBus;
  /** Legacy MCP sessions any replica can serve. */
  mcpSessions: McpSessionDirectory;
  /** Answers the replicas read once for all (upstreams' model lists). */
  cache: SharedCache;
  close(): Promise<void>;
}

export const DEFAULT_REDIS_PREFIX = 'kiwi:';

export interface SharedStateOptions {
  /** `redis://…` or `rediss://…`; absent or empty, everything stays in this process. */
  redisUrl?: string;
  /** Put before every key, so that two deployments can share one Redis; default `kiwi:`. */
  prefix?: string;
  log?: (line: string) => void;
}

export async function openSharedState(options: SharedStateOptions): Promise<SharedState> {
  const url = options.redisUrl;
  if (url === undefined || url === '') {
    return {
      where: 'this process',
      buckets: createMemoryTokenBuckets(),
      slots: createMemoryRequestSlots(),
      loops: createLoopDetector(),
      budgetHolds: (o) => createMemoryBudgetHolds(o),
      kernelEvents: createMemoryKernelEventsBus(),
      mcpSessions: LOCAL_MCP_SESSIONS,
      cache: NO_SHARED_CACHE,
      close: async () => undefined,
    };
  }
  const redis = await connectRedis(url, options.log ? { log: options.log } : {});
  const prefix = options.prefix || DEFAULT_REDIS_PREFIX;
  const slots = createRedisRequestSlots(redis, { url, prefix });
  const holds: RedisBudgetHolds[] = [];
  let kernelEvents: Awaited<ReturnType<typeof createRedisKernelEventsBus>>;
  try {
    kernelEvents = await createRedisKernelEventsBus(redis, { prefix });
  } catch (error) {
    slots.close();
    redis.destroy();
    throw redisFailure(url, 'a subscription', error);
  }
  return {
    where: shownRedisUrl(url),
    buckets: createRedisTokenBuckets(redis, { url, prefix }),
    slots,
    loops: createRedisLoopDetector(redis, { url, prefix }),
    budgetHolds(o) {
      const made = createRedisBudgetHolds(redis, { url, prefix, maxAgeMs: o.ttlMs });
      holds.push(made);
      return made;
    },
    kernelEvents,
    mcpSessions: createRedisMcpSessions(redis, { url, prefix }),
    cache: {
      get: async (key) => (await redis.get(`${prefix}cache:${key}`)) ?? undefined,
      set: async (key, value, ttlMs) => void (await redis.set(`${prefix}cache:${key}`, value, { expiration: { type: 'PX', value: ttlMs } })),
    },
    async close() {
      slots.close();
      for (const h of holds) h.close();
      await kernelEvents.close();
      await redis.close().catch(() => redis.destroy());
    },
  };
}
