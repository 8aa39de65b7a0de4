import { canonicalJson } from '../base/canonical-json.js';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import type { ToolProxy } from '../proxy/tool-proxy.js';
import type { CallOutcome, OkOutcome, ToolCall } from '../proxy/tool-call.js';
import type { Tool } from '../registry/types.js';
import { normalizeIntent } from '../resolver/resolver.js';
import { mentionedTool } from '../resolver/tool-mention.js';
import type { Resolution, ResolveOptions, StagedResolver, ToolCallSpec } from '../resolver/types.js';
import type { PrefetchCache, PrefetchEntry, Speculation } from './prefetch-cache.js';
import type { PrefetchCounters } from './types.js';
import { isPlainObject } from '../base/plain-object.js';

export interface PrefetchingResolverDeps {
  resolver: StagedResolver;
  cache: PrefetchCache;
  counters: PrefetchCounters;
  /** Every tool the proxy can run: a call to one that may change state invalidates the speculations. */
  tools: ReadonlyMap<string, Tool>;
  /**
   * How close (cosine of the embeddings) a prefetched query must be to the intent to reuse its
   * search. At 1 (the default) only a prefetched query with exactly the intent's text is reused,
   * without even embedding the intent, and the answer is the normal one. Below 1 a paraphrase is
   * reused and the answer can change: measured with USE-lite on seal-tools (4,076 tools, 300 dev
   * intents announced in a sentence first), 0.9 reused 142 searches and 7 of those answers
   * differed from the normal path's; each hit saved only the search (~7 ms). Use it with `verify`.
   */
  minCosine?: number;
  /**
   * Whether a prefetched retrieval may stand in for the intent's own search (default true). False
   * when the snapshots were searched with another embedder than the resolver's (see
   * snapshot-resolver.ts): that ranking is not the one the intent would get, so it only chooses
   * what runs ahead and the early call, and every intent resolves the normal way.
   */
  reuseSearches?: boolean;
  /** Also resolve every hit the normal way, count disagreements, and answer with the normal result (benchmarks). */
  verify?: boolean;
  onDisagreement?: (report: Disagreement) => void;
  now?: () => number;
}

export interface Disagreement {
  intent: string;
  /** The prefetched query whose search was reused. */
  query: string;
  cosine: number;
  prefetched: Resolution;
  normal: Resolution;
}

export interface TakeOptions {
  /** Only a speculation run in this session is taken (the audit log then tells the truth about the session). */
  session?: string;
  /** The caller gave up: the speculation is aborted and its cancelled outcome returned. */
  signal?: AbortSignal;
  /**
   * Runs the real call when the speculation fails or is denied (a rate limit, a timeout), so a
   * failed guess never becomes the answer. Without it, only a speculation already finished ok is taken.
   */
  fallback?: () => Promise<CallOutcome>;
}

export interface PrefetchingResolver {
  /** The agent loop's `resolve`. */
  resolve(intent: string, options: PrefetchResolveOptions): Promise<Resolution>;
  /** The speculative outcome of exactly this call (tool and canonical arguments), or undefined. */
  takeSpeculation(call: ToolCallSpec, options?: TakeOptions): Promise<CallOutcome> | undefined;
  /**
   * The agent loop's `call`: a usable speculation of exactly this call answers it through
   * `proxy.reuse` (checked and audited like the call, with `reused`); otherwise `proxy.call`
   * runs it, and a tool that may change state first invalidates every speculation not yet taken.
   */
  callThrough(request: ToolCall, proxy: CallingProxy): Promise<CallOutcome>;
}

export interface PrefetchResolveOptions extends Pick<ResolveOptions, 'fallback' | 'mayCall'> {
  context?: string;
  signal?: AbortSignal;
  /**
   * Told the call that the intent resolves to from the search prefetched for its own beginning
   * (a snapshot taken while it was written), before the normal resolution runs: the caller may
   * start it speculatively. The normal answer decides; a different early call is only wasted.
   */
  early?: (call: ToolCallSpec, entry: PrefetchEntry) => void;
}

/** A snapshot of the intent's beginning must cover at least this share of it to give an early call. */
const EARLY_MIN_SHARE = 0.5;

export type CallingProxy = Pick<ToolProxy, 'call' | 'reuse'>;

type Claimed = { ok: true; outcome: OkOutcome } | { ok: false; outcome: CallOutcome };

/**
 * Resolution with prefetch. What it guarantees, against resolving the normal way:
 *
 * - The arguments always come from the real intent (and its context), never from the snapshot.
 * - A tool the real intent names exactly wins, as it does normally.
 * - A hit on a prefetched query with the intent's exact text gives the normal answer: retrieval
 *   depends only on the text (same index, same catalog within the TTL).
 * - With `reuseSearches: false` (snapshots searched in another index) no prefetched search is
 *   reused at all: every intent is searched the normal way, and the answer is the normal one.
 * - A hit on a paraphrase (only when `minCosine` is set below 1) takes the candidate ranking
 *   and confidence from the paraphrase's search. That ranking can differ from the intent's own,
 *   so the chosen tool (or resolved/unresolved) can differ: this is NOT guaranteed, which is why
 *   it is off by default. `verify: true` measures how often it happens.
 * - A speculative result is used only for exactly the call the resolution made (tool and
 *   canonical JSON arguments), once, from the same session, only if it finished ok (otherwise
 *   the real call runs), and only if no call to a tool that may change state started since the
 *   speculation did. Through `callThrough` the call is still authorized (with its own
 *   permission context) and audited by `proxy.reuse`. What remains: the result is
 *   up to the TTL older than a real call's would be, so a read-only tool over data that changes
 *   by itself (a web API) answers as of then; and mutations that do not pass `callThrough`
 *   (another process, another route) are not seen.
 */
export function createPrefetchingResolver(deps: PrefetchingResolverDeps): PrefetchingResolver {
  const { resolver, cache, counters } = deps;
  const minCosine = deps.minCosine ?? 1;
  if (!Number.isFinite(minCosine) || minCosine < 0 || minCosine > 1) {
    throw new KiwiError('INVALID_INPUT', `prefetch minCosine must be a number from 0 to 1, got ${String(minCosine)}; leave it out for 1 (exact text only)`);
  }
  const reuseSearches = deps.reuseSearches ?? true;
  if (minCosine < 1 && !reuseSearches) {
    throw new KiwiError('INVALID_INPUT', `prefetch minCosine ${minCosine} reuses searches made for paraphrases, but the snapshots are searched in another index than the resolver's; use the resolver's embedder for prefetch, or minCosine 1`);
  }
  const now = deps.now ?? (() => performance.now());

  async function resolve(rawIntent: string, options: PrefetchResolveOptions): Promise<Resolution> {
    const t0 = now();
    const intent = normalizeIntent(rawIntent);
    // Empty intents, exact calls and intents that name a tool take the normal path: an exact call
    // needs no search, a named tool reranks the search, and a cache miss would be misleading.
    if (!intent || mentionedTool(intent, deps.tools)) return resolver.resolve(intent, options);
    throwIfAborted(options.signal, 'resolution');

    let embedMs = 0;
    let found: { entry: PrefetchEntry; cosine: number } | undefined;
    if (reuseSearches && minCosine >= 1) {
      const tMatch = now();
      const entry = cache.get(intent);
      counters.matchMs += now() - tMatch;
      if (entry && !entry.retrieval.named) found = { entry, cosine: 1 };
    } else if (reuseSearches) {
      const tEmbed = now();
      const vector = await resolver.embedQuery(intent, options.signal);
      embedMs = now() - tEmbed;
      const tMatch = now();
      found = cache.match(vector, minCosine);
      counters.matchMs += now() - tMatch;
    }

    if (!found) {
      counters.misses++;
      const early = options.early === undefined ? undefined : cache.prefixOf(intent, EARLY_MIN_SHARE);
      if (early && options.early) {
        // A guess to start early, from the rules alone: the fallback model is asked once, by the normal resolution.
        const call = await resolver.complete(intent, early.retrieval, { ...(options.context !== undefined ? { context: options.context } : {}), ...(options.signal ? { signal: options.signal } : {}) });
        if (call.status === 'resolved') {
          early.used = true;
          options.early(call.call, early);
        }
      }
      // The embedding is in the resolver's LRU now: the normal path does not compute it twice.
      const normal = await resolver.resolve(intent, options);
      normal.timings.embedMs += embedMs;
      normal.timings.totalMs = now() - t0;
      return normal;
    }

    const { entry, cosine } = found;
    counters.hits++;
    entry.used = true;
    // Only the search: the intent's own embedding was paid (or, for the same text, was in the resolver's LRU anyway).
    counters.savedMs += entry.retrieval.timings.searchMs;
    const prefetched = await resolver.complete(intent, entry.retrieval, options);
    prefetched.timings = { embedMs, searchMs: 0, fillMs: prefetched.timings.fillMs, totalMs: now() - t0 };
    prefetched.notes.push(entry.query === intent ? 'prefetch: reused the search made ahead for this text' : `prefetch: reused the search made ahead for "${entry.query}" (cosine ${cosine.toFixed(3)})`);
    if (!deps.verify) return prefetched;

    const normal = await resolver.resolve(intent, options);
    counters.verified++;
    if (!sameAnswer(prefetched, normal)) {
      counters.disagreements++;
      deps.onDisagreement?.({ intent, query: entry.query, cosine, prefetched, normal });
    }
    return normal;
  }

  /** Claims a usable speculation of exactly this call; the promise says whether it finished ok. */
  function claim(call: ToolCallSpec, options: TakeOptions, waitForRunning: boolean): Promise<Claimed> | undefined {
    const speculation = cache.findSpeculation(call.tool, canonicalJson(call.arguments), options.session);
    if (!speculation || (!waitForRunning && speculation.state !== 'ready')) return undefined;
    cache.take(speculation);
    return settle(speculation, options.signal);
  }

  async function settle(speculation: Speculation, signal: AbortSignal | undefined): Promise<Claimed> {
    const t0 = now();
    const onAbort = (): void => speculation.abort();
    if (signal?.aborted) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    let outcome: CallOutcome;
    try {
      outcome = await speculation.outcome;
    } finally {
      signal?.removeEventListener('abort', onAbort);
    }
    if (outcome.status === 'ok' && !signal?.aborted) {
      // What the real call would have taken, less the part of the speculation it still waited for.
      cache.markUsed(speculation, outcome.durationMs - (now() - t0));
      return { ok: true, outcome };
    }
    cache.discard(speculation);
    return { ok: false, outcome };
  }

  function takeSpeculation(call: ToolCallSpec, options: TakeOptions = {}): Promise<CallOutcome> | undefined {
    const { fallback } = options;
    const claimed = claim(call, options, fallback !== undefined);
    if (!claimed) return undefined;
    return claimed.then((c) => (c.ok || options.signal?.aborted || !fallback ? c.outcome : fallback()));
  }

  async function runReal(request: ToolCall, proxy: CallingProxy): Promise<CallOutcome> {
    if (request.target.item === undefined && deps.tools.get(request.target.tool)?.mutatesState === false) return proxy.call(request);
    cache.mutationStarted();
    try {
      return await proxy.call(request);
    } finally {
      cache.mutationEnded();
    }
  }

  async function callThrough(request: ToolCall, proxy: CallingProxy): Promise<CallOutcome> {
    const { target, caller } = request;
    const signal = request.run?.signal;
    const args = target.args ?? {};
    // Only tools are run ahead: a directive or knowledge call that shares a tool's name never takes that tool's result.
    const claimed = target.item === undefined && isPlainObject(args) ? claim({ tool: target.tool, arguments: args }, { session: caller.session, ...(signal ? { signal } : {}) }, true) : undefined;
    if (claimed) {
      const c = await claimed;
      // Checked (the request's own permission context included) and audited as this call, marked as reusing the speculation.
      if (c.ok) return proxy.reuse(request, c.outcome);
      if (signal?.aborted) return c.outcome;
    }
    return runReal(request, proxy);
  }

  return { resolve, takeSpeculation, callThrough };
}

/** Same status, same tool and arguments (resolved) or same best candidate and missing arguments (unresolved). */
export function sameAnswer(a: Resolution, b: Resolution): boolean {
  if (a.status === 'resolved' && b.status === 'resolved') return a.call.tool === b.call.tool && canonicalJson(a.call.arguments) === canonicalJson(b.call.arguments);
  if (a.status === 'unresolved' && b.status === 'unresolved') return a.candidates[0]?.tool === b.candidates[0]?.tool && canonicalJson(a.missing) === canonicalJson(b.missing);
  return false;
}
