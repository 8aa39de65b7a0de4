import { createHash } from 'node:crypto';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import type { Embedder } from './embedder.js';
import { readStaticModel, STATIC_MODEL_FILES, type StaticModel } from './static-model-file.js';
import { tokenize } from './static-tokenizer.js';
import { normalize } from './vector-math.js';

/**
 * A static embedder: a text's vector is a weighted mean of word vectors, looked up, not
 * computed by a network — ~0.02 ms a text instead of USE-lite's 11–25 ms, so it is meant for
 * the many embeddings nobody waits for (prefetch snapshots) and for large catalogs. The shipped
 * model (models/static-use-256) was distilled from USE-lite on Debian package descriptions by
 * scripts/build-static-embedder.ts; its README says how and what it is worse at.
 *
 * It computes on the calling thread: a text costs one table lookup per word, far less than a
 * message to a worker would.
 */

/** The model shipped in the repository and the npm package (src/embed → ../../models, dist/embed likewise). */
export const DEFAULT_STATIC_MODEL_DIR = fileURLToPath(new URL('../../models/static-use-256', import.meta.url));

export interface StaticEmbedderOptions {
  /** The folder with model.json, vocab.txt and weights.bin; default the shipped model. */
  modelDir?: string;
  /** Longer texts are cut to this many characters (default 100 000). */
  maxTextChars?: number;
  /** Cancels loading. */
  signal?: AbortSignal;
}

export interface StaticEncoder {
  readonly dimensions: number;
  /** A unit vector; a text with no known word gets the model's mean-sentence direction. */
  encode(text: string): Float32Array;
}

/** The pooling rule itself, shared with the build script so that what it evaluates is what runs. */
export function createStaticEncoder(model: Pick<StaticModel, 'vocab' | 'scales' | 'rows' | 'bias'>): StaticEncoder {
  const d = model.bias.length;
  const index = new Map<string, number>(model.vocab.map((word, i) => [word, i]));
  const fallback = normalize(model.bias);
  if (fallback === null) throw new KiwiError('INVALID_INPUT', 'static embedder: the model bias must be a non-zero finite vector');
  const sum = new Float64Array(d);
  return {
    dimensions: d,
    encode(text) {
      sum.fill(0);
      let known = 0;
      for (const word of tokenize(text)) {
        const row = index.get(word);
        if (row === undefined) continue;
        known++;
        const scale = model.scales[row]!;
        const at = row * d;
        for (let k = 0; k < d; k++) sum[k]! += scale * model.rows[at + k]!;
      }
      if (known === 0) return Float32Array.from(fallback);
      for (let k = 0; k < d; k++) sum[k] = model.bias[k]! + sum[k]! / known;
      // Only a model whose words exactly cancel its bias could give zero; the fallback keeps the contract.
      return normalize(sum) ?? Float32Array.from(fallback);
    },
  };
}

const CHUNK = 2048;

/** Weights and bias both decide the vectors: a model rebuilt with either changed gets another id, so indexes made with the old one are rebuilt. */
function fingerprint(model: StaticModel): string {
  return createHash('sha256').update(model.header.weights_sha256).update(JSON.stringify(model.header.bias)).digest('hex').slice(0, 12);
}

/**
 * The last model read, per folder, while its files stay the same (size, mtime, inode): reading
 * one costs ~80 ms (a sha256 of the weights, the vocabulary parsed), and a process that opens
 * several gateways or indexes reads the same one each time. An encoder is immutable, so the
 * embedders that share it cannot disturb each other.
 */
const loaded = new Map<string, { stamp: string; encoder: Promise<{ id: string; encoder: StaticEncoder }> }>();

async function loadEncoder(dir: string): Promise<{ id: string; encoder: StaticEncoder }> {
  const stamps = await Promise.all(Object.values(STATIC_MODEL_FILES).map((name) => stat(path.join(dir, name)).then((s) => `${s.ino}:${s.size}:${s.mtimeMs}`, () => 'missing')));
  const stamp = stamps.join('|');
  const cached = loaded.get(dir);
  if (cached?.stamp === stamp) return cached.encoder;
  const encoder = readStaticModel(dir).then((model) => ({ id: `static:${model.header.id}:${fingerprint(model)}`, encoder: createStaticEncoder(model) }));
  loaded.set(dir, { stamp, encoder });
  // A failed read is not kept: the next call reads again (and reports what is wrong).
  encoder.catch(() => {
    if (loaded.get(dir)?.encoder === encoder) loaded.delete(dir);
  });
  return encoder;
}

export async function createStaticEmbedder(options: StaticEmbedderOptions = {}): Promise<Embedder> {
  const maxTextChars = options.maxTextChars ?? 100_000;
  if (!Number.isInteger(maxTextChars) || maxTextChars < 1 || maxTextChars > 10_000_000) {
    throw new KiwiError('INVALID_INPUT', `static embedder: maxTextChars must be an integer from 1 to 10000000, not ${String(maxTextChars)}`);
  }
  throwIfAborted(options.signal, 'loading the static embedder');
  const { id, encoder } = await loadEncoder(path.resolve(options.modelDir ?? DEFAULT_STATIC_MODEL_DIR));
  throwIfAborted(options.signal, 'loading the static embedder');
  let closed = false;
  return {
    id,
    dimensions: encoder.dimensions,
    async embed(texts, signal) {
      const out: Float32Array[] = [];
      for (const [i, text] of texts.entries()) {
        // A large batch (a whole catalog) gives the event loop a turn every CHUNK texts.
        if (i % CHUNK === 0) {
          if (i > 0) await new Promise<void>((resolve) => setImmediate(resolve));
          if (signal?.aborted) throw new KiwiError('TOOL_CANCELLED', 'embedding was cancelled');
          if (closed) throw new KiwiError('TOOL_CANCELLED', 'the static embedder was closed');
        }
        out.push(encoder.encode(text.length > maxTextChars ? text.slice(0, maxTextChars) : text));
      }
      return out;
    },
    async close() {
      closed = true;
    },
  };
}
