import { z } from 'zod';
import { PREFETCH_EMBEDDERS, type PrefetchEmbedder } from './types.js';

/** gateway.yaml's `prefetch:` section. Predictive prefetch (DESIGN §5): on by default; speculation runs read-only tools only. */
export interface PrefetchConfig {
  enabled: boolean;
  ttlMs: number;
  speculate: boolean;
  concurrency: number;
  /**
   * How close (cosine) an intent must be to a predicted one to reuse its retrieval. 1 (exact text)
   * by default: at 0.9 about 5% of reused retrievals resolved differently than the normal path.
   */
  minCosine: number;
  /**
   * What snapshots are searched with: the static model (an index of its own, ~1 ms a snapshot
   * instead of a USE-lite embedding) or the resolver's embedder. Intents always resolve with the
   * resolver's; only `resolver` lets a prefetched search stand in for an intent's own.
   */
  embedder: PrefetchEmbedder;
}

export const DEFAULT_PREFETCH: PrefetchConfig = { enabled: true, ttlMs: 10_000, speculate: true, concurrency: 2, minCosine: 1, embedder: 'static' };

const d = DEFAULT_PREFETCH;

export const prefetchSchema = z
  .strictObject({
    enabled: z.boolean('must be true or false').default(d.enabled),
    ttl_ms: z.number().int().min(1000).max(600_000).default(d.ttlMs),
    speculate: z.boolean('must be true or false').default(d.speculate),
    concurrency: z.number().int().min(1).max(16).default(d.concurrency),
    min_cosine: z.number().min(0.5).max(1).default(d.minCosine),
    embedder: z.enum(PREFETCH_EMBEDDERS, 'must be static or resolver').default(d.embedder),
  })
  .superRefine((p, ctx) => {
    if (p.min_cosine < 1 && p.embedder !== 'resolver') {
      ctx.addIssue({
        code: 'custom',
        path: ['min_cosine'],
        message: "below 1 a search prefetched for a paraphrase answers the intent, which needs it made in the resolver's own index: add embedder: resolver under prefetch, or set min_cosine: 1",
      });
    }
  })
  .prefault({})
  .transform((p): PrefetchConfig => ({ enabled: p.enabled, ttlMs: p.ttl_ms, speculate: p.speculate, concurrency: p.concurrency, minCosine: p.min_cosine, embedder: p.embedder }));
