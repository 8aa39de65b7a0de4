import type { Embedder } from '../../src/embed/embedder.js';

export interface HashEmbedder extends Embedder {
  /** Texts embedded so far, across calls (tests assert what a sync re-embedded). */
  readonly embedded: string[];
  calls: number;
}

export interface HashEmbedderOptions {
  dimensions?: number;
  id?: string;
  /** Runs before each batch is embedded, e.g. to abort a sync part-way. */
  beforeBatch?: (texts: string[], call: number) => void;
}

/**
 * Feature hashing of lowercase word tokens (FNV-1a, signed buckets), L2-normalised: a real
 * bag-of-words embedder, so texts that share words are close. It is for fast, deterministic
 * tests of the index and the resolver; it is NOT a stand-in for the product's sentence model
 * and says nothing about retrieval quality.
 */
export function createHashEmbedder(options: HashEmbedderOptions = {}): HashEmbedder {
  const dimensions = options.dimensions ?? 64;
  const embedded: string[] = [];
  const embedder: HashEmbedder = {
    id: options.id ?? `hash-${dimensions}`,
    dimensions,
    embedded,
    calls: 0,
    async embed(texts, signal) {
      embedder.calls++;
      options.beforeBatch?.(texts, embedder.calls);
      if (signal?.aborted) throw signal.reason ?? new Error('aborted');
      embedded.push(...texts);
      return texts.map((text) => hashVector(text, dimensions));
    },
    async close() {},
  };
  return embedder;
}

export function hashVector(text: string, dimensions: number): Float32Array {
  const vector = new Float32Array(dimensions);
  for (const token of text.toLowerCase().match(/[\p{L}\p{N}]+/gu) ?? []) {
    let hash = 0x811c9dc5;
    for (let i = 0; i < token.length; i++) hash = Math.imul(hash ^ token.charCodeAt(i), 0x01000193);
    const bucket = (hash >>> 1) % dimensions;
    vector[bucket] = (vector[bucket] ?? 0) + ((hash & 1) === 0 ? 1 : -1);
  }
  let norm = Math.hypot(...vector);
  // No words: a fixed direction rather than a zero vector, whose cosine is undefined.
  if (norm === 0) {
    vector[0] = 1;
    norm = 1;
  }
  for (let i = 0; i < dimensions; i++) vector[i] = (vector[i] ?? 0) / norm;
  return vector;
}
