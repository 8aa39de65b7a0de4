import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import { createBatchQueue, DEFAULT_MAX_QUEUED_TEXTS, type BatchQueue } from './batch-queue.js';
import type { Embedder } from './embedder.js';
import { leaseUseLiteWorker, loadFailed } from './use-lite-worker-lease.js';
import { loadUseLite, type UseLiteModel } from './use-lite-worker.mjs';

/**
 * The offline default: Universal Sentence Encoder lite (512-d) from the weights npm ships.
 * tfjs computes synchronously (~20 ms a text, ~170 ms for 32 here), so by default the model
 * lives in a worker thread (one per process, shared by every such embedder: use-lite-worker-lease.ts)
 * and the event loop never waits on it; `worker: false` runs it on the calling thread, one small
 * batch per turn.
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
  const lease = await leaseUseLiteWorker(signal);
  const queue = createBatchQueue({ name: NAME, ...settings, onBusyChange: (busy) => lease.setBusy(busy), run: (texts) => lease.run(texts) });
  lease.onStop((error) => void queue.close(error));
  let closing: Promise<void> | undefined;
  return embedder(lease.dimensions, queue, () => {
    const reason = new KiwiError('TOOL_CANCELLED', `${NAME} was closed before this request finished`);
    // The running batch is not waited for: its caller is failed now, and its result ignored.
    void queue.close(reason);
    closing ??= lease.release(reason);
    return closing;
  });
}
