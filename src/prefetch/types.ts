import type { CallOutcome } from '../proxy/tool-call.js';

/**
 * Plain types of predictive prefetch (DESIGN §5), shared by the snapshotter, the predictor, the
 * dispatcher, the cache, the gateway and the benchmark.
 */

/**
 * Which embedder prefetch searches its snapshots with: `static` (the shipped static model, an
 * index of its own) or `resolver` (the resolver's own embedder and index).
 */
export const PREFETCH_EMBEDDERS = ['static', 'resolver'] as const;
export type PrefetchEmbedder = (typeof PREFETCH_EMBEDDERS)[number];

/** A view of the agent's text taken while it streams. */
export interface Snapshot {
  /** The agent text since the last intent (or the turn's start), newest last, capped. */
  text: string;
  /** The text prediction works on: the last sentence or two of `text`. */
  query: string;
  /** Characters of agent text seen in this request when the snapshot was taken. */
  at: number;
}

export interface Prediction {
  /** What the predicted intent is expected to say (the snapshot's query). */
  query: string;
  /** The tool predicted to be called next. */
  tool: string;
  /** In [0, 1]: how likely this tool is the next call. */
  confidence: number;
  /** Where the prediction came from: the text, the learned tool-to-tool transitions, or both. */
  source: 'text' | 'transition' | 'both';
}

/** Counters of one gateway process (or one benchmark run). */
export interface PrefetchCounters {
  snapshots: number;
  predictions: number;
  /** Retrievals run ahead of an intent. */
  prefetches: number;
  /** Intents that reused a prefetched retrieval. */
  hits: number;
  /** Intents resolved the normal way although prefetch was on. */
  misses: number;
  /** Prefetched retrievals that expired or were evicted without ever being used. */
  wasted: number;
  speculativeStarted: number;
  /**
   * Confident read-only predictions not run ahead: a value was not closed yet in the streamed
   * text (a quote still open, or no quote), or the request had started its cap of speculative runs.
   */
  speculativeRefused: number;
  speculativeUsed: number;
  /** Speculative results not used: the resolved call differed, they failed, or they expired. */
  speculativeDiscarded: number;
  /** Search and tool time the hits did not have to spend, in ms (estimated from the prefetch's own timings). */
  savedMs: number;
  /** Time spent predicting (embedding + search of snapshots), in ms. */
  predictorMs: number;
  /** Snapshots dropped unpredicted because the queue was full (a newer one took their place). */
  dropped: number;
  /** Time spent scanning the cache for a match, in ms. */
  matchMs: number;
  /** Hits checked against the normal path (`verify: true`), and how many of them answered differently. */
  verified: number;
  disagreements: number;
}

/**
 * Which tool tends to follow which (learned from the audit log). `next` gives at most `k` tools,
 * most likely first, with `p` in [0, 1]; an empty list means the model has no opinion.
 */
export interface TransitionModel {
  next(previousTool: string | null, k: number): { tool: string; p: number }[];
  observe(previousTool: string | null, tool: string): void;
}

export interface CachedSpeculation {
  tool: string;
  /** Canonical JSON of the arguments: a speculative result is used only for exactly this call. */
  argsKey: string;
  outcome: Promise<CallOutcome>;
}
