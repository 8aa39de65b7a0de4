/**
 * A cache the replicas of one gateway share (Redis), for answers that are the same wherever they
 * are asked and cost an outside request each time (an upstream's model list). Without Redis it
 * holds nothing: each process caches on its own, as before. Values are strings; a failure to read
 * or write is a miss, never an error.
 */
export interface SharedCache {
  get(key: string): Promise<string | undefined>;
  set(key: string, value: string, ttlMs: number): Promise<void>;
}

export const NO_SHARED_CACHE: SharedCache = {
  get: async () => undefined,
  set: async () => undefined,
};
