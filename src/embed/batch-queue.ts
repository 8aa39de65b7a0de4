import { setImmediate as nextTurn } from 'node:timers/promises';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import { textHead } from '../base/text-cut.js';

/**
 * The request queue every embedder shares: callers' texts are cut to a length cap, split into
 * batches (several small requests share one batch), and run one batch at a time, so a model is
 * never asked to do two things at once and the event loop gets a turn between batches. A
 * cancelled request leaves the queue at once; a batch already running is abandoned only when
 * every request in it is gone.
 */

export interface BatchQueueOptions {
  /** Names the embedder in messages. */
  name: string;
  batchSize: number;
  /** Texts waiting or running, across all callers; past it `embed` refuses (RATE_LIMITED). */
  maxQueuedTexts: number;
  /** Longer texts are cut: models read only their first few hundred tokens anyway, and tokenisers can be slow on huge input. */
  maxTextChars: number;
  /** Embeds one batch; must return one unit vector per text, in order. */
  run(texts: string[], signal: AbortSignal): Promise<Float32Array[]>;
  /** Told when the queue starts and stops working (a worker is kept referenced only while busy). */
  onBusyChange?: (busy: boolean) => void;
}

export interface BatchQueue {
  embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]>;
  /**
   * Rejects every waiting and running request with `error` and refuses new ones; resolves once
   * a batch still running has returned and the queue is idle, so the model can be freed safely.
   */
  close(error: KiwiError): Promise<void>;
}

interface Pending {
  texts: string[];
  /** Index of the first text not yet handed to `run`. */
  next: number;
  done: number;
  results: Float32Array[];
  settled: boolean;
  resolve(vectors: Float32Array[]): void;
  reject(error: unknown): void;
  detach(): void;
}

interface Part {
  req: Pending;
  start: number;
  count: number;
}

export const DEFAULT_MAX_QUEUED_TEXTS = 100_000;

export function createBatchQueue(options: BatchQueueOptions): BatchQueue {
  const waiting: Pending[] = [];
  let queuedTexts = 0;
  let closedWith: KiwiError | undefined;
  let current: { parts: Part[]; controller: AbortController } | undefined;
  let pumping: Promise<void> | undefined;

  function settle(req: Pending, outcome: { vectors: Float32Array[] } | { error: unknown }): void {
    if (req.settled) return;
    req.settled = true;
    req.detach();
    queuedTexts -= req.texts.length - req.done;
    const at = waiting.indexOf(req);
    if (at >= 0) waiting.splice(at, 1);
    if ('vectors' in outcome) {
      req.resolve(outcome.vectors);
      return;
    }
    req.reject(outcome.error);
    // A running batch whose every caller has gone is abandoned (an HTTP call is aborted; a model run is ignored).
    if (current !== undefined && current.parts.every((p) => p.req.settled)) current.controller.abort();
  }

  function takeBatch(): Part[] {
    const parts: Part[] = [];
    let size = 0;
    for (const req of waiting) {
      if (size >= options.batchSize) break;
      const count = Math.min(options.batchSize - size, req.texts.length - req.next);
      parts.push({ req, start: req.next, count });
      req.next += count;
      size += count;
    }
    for (const { req } of parts) {
      if (req.next === req.texts.length) waiting.splice(waiting.indexOf(req), 1);
    }
    return parts;
  }

  async function runBatch(parts: Part[]): Promise<void> {
    const texts = parts.flatMap((p) => p.req.texts.slice(p.start, p.start + p.count));
    const controller = new AbortController();
    current = { parts, controller };
    try {
      const vectors = await options.run(texts, controller.signal);
      if (vectors.length !== texts.length) {
        throw new KiwiError('INTERNAL', `${options.name} returned ${vectors.length} vectors for ${texts.length} texts; this is a bug in the embedder`);
      }
      let offset = 0;
      for (const { req, start, count } of parts) {
        for (let i = 0; i < count; i++) req.results[start + i] = vectors[offset + i] as Float32Array;
        offset += count;
        if (req.settled) continue;
        req.done += count;
        queuedTexts -= count;
        if (req.done === req.texts.length) settle(req, { vectors: req.results });
      }
    } catch (error) {
      for (const { req } of parts) settle(req, { error });
    } finally {
      current = undefined;
    }
  }

  /** Works through the queue until it is empty; at most one runs at a time. */
  async function pump(): Promise<void> {
    options.onBusyChange?.(true);
    try {
      // Started from a later turn than the embed() call, so requests made together share a batch.
      await nextTurn();
      while (waiting.length > 0 && closedWith === undefined) {
        await runBatch(takeBatch());
        await nextTurn();
      }
    } finally {
      pumping = undefined;
      options.onBusyChange?.(false);
    }
  }

  function embed(texts: string[], signal?: AbortSignal): Promise<Float32Array[]> {
    if (closedWith !== undefined) return Promise.reject(new KiwiError('INTERNAL', `${options.name} was closed; create a new embedder`));
    if (!Array.isArray(texts) || texts.some((t) => typeof t !== 'string')) {
      return Promise.reject(new KiwiError('INVALID_INPUT', `${options.name}: embed() takes an array of strings`));
    }
    try {
      throwIfAborted(signal, `embedding with ${options.name}`);
    } catch (error) {
      return Promise.reject(error);
    }
    if (texts.length === 0) return Promise.resolve([]);
    if (queuedTexts + texts.length > options.maxQueuedTexts) {
      return Promise.reject(
        new KiwiError('RATE_LIMITED', `${options.name} already has ${queuedTexts} texts queued (cap ${options.maxQueuedTexts}); wait for earlier requests or send fewer texts at once`),
      );
    }
    return new Promise<Float32Array[]>((resolve, reject) => {
      const onAbort = () => settle(req, { error: new KiwiError('TOOL_CANCELLED', `embedding with ${options.name} was cancelled`) });
      const req: Pending = {
        texts: texts.map((t) => textHead(t, options.maxTextChars)),
        next: 0,
        done: 0,
        results: new Array<Float32Array>(texts.length),
        settled: false,
        resolve,
        reject,
        detach: () => signal?.removeEventListener('abort', onAbort),
      };
      signal?.addEventListener('abort', onAbort, { once: true });
      waiting.push(req);
      queuedTexts += texts.length;
      pumping ??= pump();
    });
  }

  return {
    embed,
    close(error) {
      if (closedWith === undefined) {
        closedWith = error;
        for (const req of [...waiting]) settle(req, { error });
        for (const { req } of current?.parts ?? []) settle(req, { error });
      }
      return pumping ?? Promise.resolve();
    },
  };
}
