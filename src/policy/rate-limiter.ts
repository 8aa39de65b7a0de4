/**
 * Rate limits as token buckets: a bucket holds up to `max` calls and refills continuously at
 * `max` per `perMs`, so a burst of `max` is allowed after a quiet spell and the long-run rate
 * never exceeds the limit.
 *
 * Buckets, for the context and every ancestor that sets a limit:
 * - per tool: one per (client, tool id), using the first `perTool` key that matches the tool;
 * - per client: one per client, shared by all its tools.
 * Buckets key on the client (an API key's name), never on a session or connection: a client
 * that opens a new session does not get fresh limits.
 * A call takes one token from every bucket that applies, or from none when any is empty, so a
 * denied call costs nothing.
 *
 * A bucket belongs to a context's place (root folder, the labels from that context out to the
 * outermost one, and the limit), not to the object, so a context rebuilt for every call (e.g.
 * re-rooted under the proxy's) keeps its buckets.
 *
 * State lives in the limiter instance and is bounded: beyond `maxKeys` buckets the least
 * recently used one is dropped. An idle bucket refills to full, so dropping it loses nothing;
 * only a limiter with more than `maxKeys` busy buckets at once would forget some.
 */
import { contextChain, deny, matchesAny, quote, type Decision, type PermissionContext, type RateLimit } from './permission-context.js';

export interface RateLimiterOptions {
  /** Milliseconds clock; tests inject one. Defaults to Date.now. */
  now?: () => number;
  /** Most buckets kept at once; default 10 000. */
  maxKeys?: number;
}

export interface RateLimiter {
  take(ctx: PermissionContext, toolId: string, clientId: string): Decision;
  /** Buckets held now (for tests and metrics). */
  size(): number;
}

interface Bucket {
  tokens: number;
  updated: number;
}

interface Need {
  ctx: PermissionContext;
  key: string;
  limit: RateLimit;
  what: string;
}

/** Float refills (e.g. 60 per 60000 ms) may land a hair under a whole token. */
const EPSILON = 1e-9;

export function createRateLimiter(options: RateLimiterOptions = {}): RateLimiter {
  const now = options.now ?? Date.now;
  const maxKeys = Math.max(1, options.maxKeys ?? 10_000);
  const buckets = new Map<string, Bucket>();
  const needsFor = (ctx: PermissionContext, toolId: string, clientId: string): Need[] => {
    const needs: Need[] = [];
    const chain = contextChain(ctx);
    for (const [depth, c] of chain.entries()) {
      const place = [c.root, ...chain.slice(depth).map((a) => a.label)];
      const toolKey = Object.keys(c.rules.rateLimits.perTool).find((k) => matchesAny([k], toolId));
      const toolLimit = toolKey === undefined ? undefined : c.rules.rateLimits.perTool[toolKey];
      if (toolKey !== undefined && toolLimit) {
        const keyNote = toolKey === toolId ? '' : `, key ${quote(toolKey)}`;
        needs.push({ ctx: c, key: JSON.stringify([place, 't', toolLimit.max, toolLimit.perMs, clientId, toolId]), limit: toolLimit, what: `tool ${quote(toolId)} (${describe(toolLimit)}${keyNote})` });
      }
      const clientLimit = c.rules.rateLimits.perClient;
      if (clientLimit) {
        needs.push({ ctx: c, key: JSON.stringify([place, 's', clientLimit.max, clientLimit.perMs, clientId]), limit: clientLimit, what: `client ${quote(clientId)} (${describe(clientLimit)})` });
      }
    }
    return needs;
  };

  const refilled = (key: string, limit: RateLimit, t: number): Bucket => {
    const bucket = buckets.get(key) ?? { tokens: limit.max, updated: t };
    if (t > bucket.updated) {
      bucket.tokens = Math.min(limit.max, bucket.tokens + ((t - bucket.updated) * limit.max) / limit.perMs);
      bucket.updated = t;
    }
    // Re-inserting keeps the map in least-recently-used order for eviction.
    buckets.delete(key);
    buckets.set(key, bucket);
    return bucket;
  };

  const evict = (): void => {
    for (const key of buckets.keys()) {
      if (buckets.size <= maxKeys) break;
      buckets.delete(key);
    }
  };

  return {
    take(ctx, toolId, clientId) {
      if (typeof toolId !== 'string' || toolId === '') return deny(ctx, 'rate limit check needs a tool id');
      if (typeof clientId !== 'string') return deny(ctx, 'rate limit check needs a client id');
      const t = now();
      const needs = needsFor(ctx, toolId, clientId);
      const held = needs.map((n) => ({ need: n, bucket: refilled(n.key, n.limit, t) }));
      for (const { need, bucket } of held) {
        if (bucket.tokens < 1 - EPSILON) {
          const retryMs = Math.max(1, Math.ceil(((1 - bucket.tokens) * need.limit.perMs) / need.limit.max));
          evict();
          return deny(need.ctx, `rate limit for ${need.what} is used up; retry in ${retryMs} ms`);
        }
      }
      for (const { bucket } of held) bucket.tokens = Math.max(0, bucket.tokens - 1);
      evict();
      return { allowed: true };
    },
    size: () => buckets.size,
  };
}

function describe(limit: RateLimit): string {
  return `${limit.max} per ${limit.perMs} ms`;
}
