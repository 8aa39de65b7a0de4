/**
 * Where rate limits keep their token buckets: in this process (below), or in Redis when
 * replicas share the limits (shared-state/redis-token-buckets.ts, the same algorithm in one Lua
 * script). A bucket holds up to `max` tokens and refills continuously at `max` per `perMs`.
 * `take` takes one token from every bucket it names or from none: a call refused by one limit
 * costs nothing from the others.
 */

/** A bucket a call needs a token from. The key says whose bucket it is; max and perMs its size and rate. */
export interface BucketNeed {
  key: string;
  max: number;
  perMs: number;
}

/** Taken from all; or `empty` is the index of the first need whose bucket had no whole token, and `retryMs` when it will. */
export type BucketTake = { ok: true } | { ok: false; empty: number; retryMs: number };

export interface TokenBuckets {
  take(needs: readonly BucketNeed[]): Promise<BucketTake>;
}

export interface MemoryTokenBuckets extends TokenBuckets {
  /** Buckets held now (for tests and metrics). */
  size(): number;
}

/** Float refills (e.g. 60 per 60000 ms) may land a hair under a whole token. */
export const BUCKET_EPSILON = 1e-9;

interface Bucket {
  tokens: number;
  updated: number;
}

/**
 * Bounded: beyond `maxKeys` buckets the least recently used one is dropped. An idle bucket
 * refills to full, so dropping it loses nothing; only more than `maxKeys` busy buckets at once
 * would forget some. A clock that goes backwards counts as no time passing.
 */
export function createMemoryTokenBuckets(options: { now?: () => number; maxKeys?: number } = {}): MemoryTokenBuckets {
  const now = options.now ?? Date.now;
  const maxKeys = Math.max(1, options.maxKeys ?? 10_000);
  const buckets = new Map<string, Bucket>();

  const refilled = (need: BucketNeed, t: number): Bucket => {
    const bucket = buckets.get(need.key) ?? { tokens: need.max, updated: t };
    if (t > bucket.updated) {
      bucket.tokens = Math.min(need.max, bucket.tokens + ((t - bucket.updated) * need.max) / need.perMs);
      bucket.updated = t;
    }
    // Re-inserting keeps the map in least-recently-used order for eviction.
    buckets.delete(need.key);
    buckets.set(need.key, bucket);
    return bucket;
  };
  const evict = (): void => {
    for (const key of buckets.keys()) {
      if (buckets.size <= maxKeys) break;
      buckets.delete(key);
    }
  };

  return {
    async take(needs) {
      const t = now();
      const held = needs.map((need) => refilled(need, t));
      const empty = held.findIndex((bucket) => bucket.tokens < 1 - BUCKET_EPSILON);
      if (empty === -1) for (const bucket of held) bucket.tokens = Math.max(0, bucket.tokens - 1);
      evict();
      if (empty === -1) return { ok: true };
      const need = needs[empty]!;
      return { ok: false, empty, retryMs: Math.max(1, Math.ceil(((1 - held[empty]!.tokens) * need.perMs) / need.max)) };
    },
    size: () => buckets.size,
  };
}
