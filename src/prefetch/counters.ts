import type { PrefetchCounters } from './types.js';

export interface Counters extends PrefetchCounters {
  /** A copy, for reports: the counters themselves keep moving. */
  snapshot(): PrefetchCounters;
}

/** Mutable counters shared by the dispatcher, the cache and the prefetching resolver of one process (or bench run). */
export function createCounters(): Counters {
  const counters: PrefetchCounters = {
    snapshots: 0,
    predictions: 0,
    prefetches: 0,
    hits: 0,
    misses: 0,
    wasted: 0,
    speculativeStarted: 0,
    speculativeRefused: 0,
    speculativeUsed: 0,
    speculativeDiscarded: 0,
    savedMs: 0,
    predictorMs: 0,
    dropped: 0,
    matchMs: 0,
    verified: 0,
    disagreements: 0,
  };
  return Object.assign(counters, {
    snapshot(): PrefetchCounters {
      const { snapshot: _, ...copy } = counters as Counters;
      return copy;
    },
  });
}
