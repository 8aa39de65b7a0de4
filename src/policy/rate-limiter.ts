/**
 * Rate limits as token buckets (token-buckets.ts): a bucket holds up to `max` calls and refills
 * continuously at `max` per `perMs`, so a burst of `max` is allowed after a quiet spell and the
 * long-run rate never exceeds the limit.
 *
 * Buckets, for the context and every ancestor that sets a limit:
 * - per tool: one per (client, tool id), using the first `perTool` key that matches the tool;
 * - per client: one per client, shared by all its tools.
 * Buckets key on the client (an API key's name), never on a session or connection: a client
 * that opens a new session does not get fresh limits.
 * A call takes one token from every bucket that applies, or from none when any is empty, so a
 * denied call costs nothing.
 *
 * A bucket belongs to a context's place (its root folder relative to the project's, the labels
 * from that context out to the outermost one, and the limit), not to the object, so a context
 * rebuilt for every call (e.g. re-rooted under the proxy's) keeps its buckets, and replicas that
 * keep the same project in different folders share them.
 */
import path from 'node:path';
import { contextChain, deny, matchesAny, quote, type Decision, type PermissionContext, type RateLimit } from './permission-context.js';
import { createMemoryTokenBuckets, type BucketNeed, type TokenBuckets } from './token-buckets.js';

export interface RateLimiterOptions {
  /** Where the buckets live; default: this process (createMemoryTokenBuckets with `now`). */
  buckets?: TokenBuckets;
  /** Milliseconds clock for the default buckets; tests inject one. Defaults to Date.now. */
  now?: () => number;
  /** Most buckets the default buckets keep at once; default 10 000. */
  maxKeys?: number;
  /** The project's root: a context's place is named relative to it. */
  root?: string;
}

export interface RateLimiter {
  take(ctx: PermissionContext, toolId: string, clientId: string): Promise<Decision>;
}

interface Need extends BucketNeed {
  ctx: PermissionContext;
  what: string;
}

export function createRateLimiter(options: RateLimiterOptions = {}): RateLimiter {
  const buckets = options.buckets ?? createMemoryTokenBuckets({ ...(options.now ? { now: options.now } : {}), ...(options.maxKeys === undefined ? {} : { maxKeys: options.maxKeys }) });
  const placeOf = (root: string): string => (options.root === undefined ? root : path.relative(options.root, root) || '.');
  const needsFor = (ctx: PermissionContext, toolId: string, clientId: string): Need[] => {
    const needs: Need[] = [];
    const chain = contextChain(ctx);
    for (const [depth, c] of chain.entries()) {
      const place = [placeOf(c.root), ...chain.slice(depth).map((a) => a.label)];
      const toolKey = Object.keys(c.rules.rateLimits.perTool).find((k) => matchesAny([k], toolId));
      const toolLimit = toolKey === undefined ? undefined : c.rules.rateLimits.perTool[toolKey];
      if (toolKey !== undefined && toolLimit) {
        const keyNote = toolKey === toolId ? '' : `, key ${quote(toolKey)}`;
        needs.push({ ctx: c, key: JSON.stringify([place, 't', toolLimit.max, toolLimit.perMs, clientId, toolId]), ...toolLimit, what: `tool ${quote(toolId)} (${describe(toolLimit)}${keyNote})` });
      }
      const clientLimit = c.rules.rateLimits.perClient;
      if (clientLimit) {
        needs.push({ ctx: c, key: JSON.stringify([place, 's', clientLimit.max, clientLimit.perMs, clientId]), ...clientLimit, what: `client ${quote(clientId)} (${describe(clientLimit)})` });
      }
    }
    return needs;
  };

  return {
    async take(ctx, toolId, clientId) {
      if (typeof toolId !== 'string' || toolId === '') return deny(ctx, 'rate limit check needs a tool id');
      if (typeof clientId !== 'string') return deny(ctx, 'rate limit check needs a client id');
      const needs = needsFor(ctx, toolId, clientId);
      if (needs.length === 0) return { allowed: true };
      const taken = await buckets.take(needs.map(({ key, max, perMs }) => ({ key, max, perMs })));
      if (taken.ok) return { allowed: true };
      const need = needs[taken.empty]!;
      return deny(need.ctx, `rate limit for ${need.what} is used up; retry in ${taken.retryMs} ms`);
    },
  };
}

function describe(limit: RateLimit): string {
  return `${limit.max} per ${limit.perMs} ms`;
}
