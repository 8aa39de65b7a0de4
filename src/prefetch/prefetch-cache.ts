import { LRUCache } from 'lru-cache';
import { describeError, KiwiError } from '../base/errors.js';
import { dot } from '../embed/vector-math.js';
import type { CallOutcome } from '../proxy/tool-call.js';
import type { Retrieval } from '../resolver/types.js';
import type { CachedSpeculation, PrefetchCounters } from './types.js';

/** A prefetched retrieval, and the read-only calls run speculatively from it. */
export interface PrefetchEntry {
  /** The snapshot query the retrieval was made for (normalised as the resolver sees it). */
  query: string;
  vector?: Float32Array;
  retrieval: Retrieval;
  speculations: Speculation[];
  /** An intent reused the retrieval, or a call took one of its speculations. */
  used: boolean;
}

/**
 * `running` → `ready` (ok outcome) → `taken` → `used`; anything not yet used can end `discarded`
 * (failed, aborted, superseded by a mutation, expired). Each speculation is counted once: used or discarded.
 */
export type SpeculationState = 'running' | 'ready' | 'taken' | 'used' | 'discarded';

export interface Speculation extends CachedSpeculation {
  session: string;
  state: SpeculationState;
  /** The cache's mutation epoch when it started: a call that may change state since makes it unusable. */
  epoch: number;
  startedAt: number;
  abort(): void;
}

export interface SpeculateRequest {
  tool: string;
  argsKey: string;
  session: string;
  /** Starts the call; it must stop when `signal` aborts. */
  run(signal: AbortSignal): Promise<CallOutcome>;
}

export interface PrefetchCacheOptions {
  /** How long a prefetched retrieval (and its speculation) stays usable (default 10 000 ms). */
  ttlMs?: number;
  /** Most entries kept; the least recently added go first (default 256). */
  max?: number;
  /** Most speculative calls running at once, across sessions (default 4). */
  maxRunning?: number;
  counters: PrefetchCounters;
  /** The clock of the TTL (tests pass a fake one). */
  now?: () => number;
}

export interface PrefetchCache {
  readonly size: number;
  get(query: string): PrefetchEntry | undefined;
  /** The entry with the longest query that starts `text` and covers at least `minShare` of it (a snapshot of the intent while it was written). */
  prefixOf(text: string, minShare: number): PrefetchEntry | undefined;
  /** Stores a retrieval, or returns the entry already there for the same query. */
  add(retrieval: Retrieval): PrefetchEntry;
  /** The entry whose query vector is closest to `vector`, if its cosine is at least `minCosine`. */
  match(vector: Float32Array, minCosine: number): { entry: PrefetchEntry; cosine: number } | undefined;
  /** Starts a speculative call kept in `entry`; undefined when one is not allowed now (see `canSpeculate`). */
  speculate(entry: PrefetchEntry, request: SpeculateRequest): Speculation | undefined;
  canSpeculate(): boolean;
  /** A usable speculation of exactly this call (tool and canonical arguments), newest first; it is not yet taken. */
  findSpeculation(tool: string, argsKey: string, session?: string): Speculation | undefined;
  /** Claims a speculation for a call; the taker then ends it with `markUsed` or `discard`. */
  take(speculation: Speculation): void;
  markUsed(speculation: Speculation, savedMs: number): void;
  /** Ends a speculation unused (aborting it if it still runs); a no-op once it ended. */
  discard(speculation: Speculation): void;
  /**
   * A call that may change state starts or ends: every speculation not yet taken is discarded
   * (it may have read the old state) and none starts while such a call runs.
   */
  mutationStarted(): void;
  mutationEnded(): void;
  /** Drops everything (unused entries count as wasted). */
  clear(): void;
}

const USABLE: ReadonlySet<SpeculationState> = new Set(['running', 'ready']);

export function createPrefetchCache(options: PrefetchCacheOptions): PrefetchCache {
  const { counters } = options;
  const now = options.now ?? (() => performance.now());
  const ttlMs = checkInt('ttlMs', options.ttlMs ?? 10_000, 1, 86_400_000);
  const max = checkInt('max', options.max ?? 256, 1, 1_000_000);
  const maxRunning = checkInt('maxRunning', options.maxRunning ?? 4, 0, 1000);
  let epoch = 0;
  let mutating = 0;
  let running = 0;
  const owners = new WeakMap<Speculation, PrefetchEntry>();

  const discard = (s: Speculation): void => {
    if (s.state === 'used' || s.state === 'discarded') return;
    const wasRunning = s.state === 'running';
    s.state = 'discarded';
    counters.speculativeDiscarded++;
    if (wasRunning) s.abort();
  };

  const entries = new LRUCache<string, PrefetchEntry>({
    max,
    ttl: ttlMs,
    // Checked on every read; the default 1 ms resolution would arm a timer per read instead.
    ttlResolution: 0,
    perf: { now },
    dispose(entry) {
      if (!entry.used) counters.wasted++;
      // A taken speculation is being awaited by a call: its taker ends it.
      for (const s of entry.speculations) if (USABLE.has(s.state)) discard(s);
    },
  });

  const all = function* (): Generator<PrefetchEntry> {
    entries.purgeStale();
    yield* entries.values();
  };

  const discardAll = (): void => {
    for (const entry of all()) for (const s of entry.speculations) if (USABLE.has(s.state)) discard(s);
  };

  return {
    get size() {
      return entries.size;
    },
    prefixOf(text, minShare) {
      let best: PrefetchEntry | undefined;
      for (const entry of entries.values()) {
        const n = entry.query.length;
        if (n >= minShare * text.length && n <= text.length && n > (best?.query.length ?? 0) && text.startsWith(entry.query)) best = entry;
      }
      return best;
    },
    get(query) {
      return entries.get(query);
    },
    add(retrieval) {
      const existing = entries.get(retrieval.intent);
      if (existing) return existing;
      const entry: PrefetchEntry = { query: retrieval.intent, retrieval, speculations: [], used: false, ...(retrieval.vector ? { vector: retrieval.vector } : {}) };
      entries.set(retrieval.intent, entry);
      return entry;
    },
    match(vector, minCosine) {
      let best: { entry: PrefetchEntry; cosine: number } | undefined;
      for (const entry of all()) {
        // A named retrieval is one tool with no search behind it; it says nothing about another text.
        if (!entry.vector || entry.retrieval.named || entry.vector.length !== vector.length) continue;
        const cosine = dot(entry.vector, vector);
        if (cosine >= minCosine && (!best || cosine > best.cosine)) best = { entry, cosine };
      }
      return best;
    },
    canSpeculate() {
      return mutating === 0 && running < maxRunning;
    },
    speculate(entry, request) {
      if (mutating > 0 || running >= maxRunning) return undefined;
      const controller = new AbortController();
      running++;
      counters.speculativeStarted++;
      // The callback runs after the call settles, long after `speculation` below is assigned.
      const outcome = startCall(request, controller.signal).then((result) => {
        running--;
        if (speculation.state === 'running') {
          if (result.status === 'ok') speculation.state = 'ready';
          else discard(speculation);
        }
        return result;
      });
      const speculation: Speculation = {
        tool: request.tool,
        argsKey: request.argsKey,
        session: request.session,
        state: 'running',
        epoch,
        startedAt: now(),
        abort: () => controller.abort(),
        outcome,
      };
      entry.speculations.push(speculation);
      owners.set(speculation, entry);
      return speculation;
    },
    findSpeculation(tool, argsKey, session) {
      let best: Speculation | undefined;
      for (const entry of all()) {
        for (const s of entry.speculations) {
          if (!USABLE.has(s.state) || s.epoch !== epoch || s.tool !== tool || s.argsKey !== argsKey) continue;
          if (session !== undefined && s.session !== session) continue;
          if (!best || s.startedAt > best.startedAt) best = s;
        }
      }
      return best;
    },
    take(speculation) {
      if (!USABLE.has(speculation.state)) return;
      speculation.state = 'taken';
      const entry = owners.get(speculation);
      if (entry) entry.used = true;
    },
    markUsed(speculation, savedMs) {
      if (speculation.state !== 'taken') return;
      speculation.state = 'used';
      counters.speculativeUsed++;
      counters.savedMs += Math.max(0, savedMs);
    },
    discard,
    mutationStarted() {
      mutating++;
      epoch++;
      discardAll();
    },
    mutationEnded() {
      mutating = Math.max(0, mutating - 1);
      epoch++;
      discardAll();
    },
    clear() {
      entries.clear();
    },
  };
}

/** The proxy answers with outcomes, not exceptions; anything thrown anyway becomes an error outcome, never an unhandled rejection. */
async function startCall(request: SpeculateRequest, signal: AbortSignal): Promise<CallOutcome> {
  try {
    return await request.run(signal);
  } catch (error) {
    return { callId: '', tool: request.tool, durationMs: 0, stuck: false, status: 'error', error: { code: 'INTERNAL', message: describeError(error) } };
  }
}

function checkInt(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new KiwiError('INVALID_INPUT', `prefetch cache ${name} must be an integer from ${min} to ${max}, got ${String(value)}; leave it out for the default`);
  }
  return value;
}
