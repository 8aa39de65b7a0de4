import { canonicalJson } from '../base/canonical-json.js';
import { describeError, KiwiError } from '../base/errors.js';
import type { Caller } from '../policy/caller.js';
import type { CallOutcome, ToolCall } from '../proxy/tool-call.js';
import type { Tool } from '../registry/types.js';
import { normalizeIntent } from '../resolver/resolver.js';
import type { Retrieval, StagedResolver, ToolCallSpec } from '../resolver/types.js';
import { closedValues } from './closed-values.js';
import type { PrefetchCache, PrefetchEntry, Speculation } from './prefetch-cache.js';
import type { Predictor } from './predictor.js';
import type { Prediction, PrefetchCounters, Snapshot } from './types.js';

export interface PrefetchDispatcherDeps {
  predictor: Predictor;
  /** Fills a speculative call's arguments from the snapshot text. */
  resolver: Pick<StagedResolver, 'complete'>;
  cache: PrefetchCache;
  tools: ReadonlyMap<string, Tool>;
  /** The tool proxy's call; speculative calls are sent with source 'prefetch'. */
  call(call: ToolCall): Promise<CallOutcome>;
  /** The conversation speculative calls are audited under. */
  session: string;
  /** Whose request this is: speculative calls are checked under its rights. */
  caller: Caller;
  counters: PrefetchCounters;
  /** Predictions running at once (default 2). */
  concurrency?: number;
  /** Snapshots waiting for a slot; when full the oldest is dropped, newer text predicts better (default 2). */
  maxQueued?: number;
  /** A prediction must be at least this confident to be run speculatively (default 0.6). */
  threshold?: number;
  /** Run read-only predicted calls ahead (default true). */
  speculate?: boolean;
  /**
   * Speculative calls this dispatcher (one request) may start in all, early calls included
   * (default 8); a read-only call refused by it is counted in `speculativeRefused`.
   */
  maxSpeculations?: number;
  /** Told about predictions that failed for another reason than a cancel; prefetch never fails a request. */
  log?: (message: string) => void;
}

export interface CancelOptions {
  /** Also abort speculative calls still running (default true); finished ones stay for their TTL. */
  speculations?: boolean;
}

export interface PrefetchDispatcher {
  onSnapshot(snapshot: Snapshot, previousTool: string | null): void;
  /** Runs `call` ahead when it is read-only (the early call of an intent that just closed, see the prefetching resolver). */
  speculateCall(entry: PrefetchEntry, call: ToolCallSpec): void;
  /** Aborts predictions in flight and forgets queued snapshots; new snapshots are taken afterwards. */
  cancel(options?: CancelOptions): void;
  /** Settles when no prediction is queued or running (speculative calls may still run). */
  idle(): Promise<void>;
}

interface Task {
  key: string;
  snapshot: Snapshot;
  previousTool: string | null;
}

export const DEFAULT_MAX_SPECULATIONS = 8;

export function createPrefetchDispatcher(deps: PrefetchDispatcherDeps): PrefetchDispatcher {
  const concurrency = positiveInt('concurrency', deps.concurrency ?? 2, 1, 64);
  const maxQueued = positiveInt('maxQueued', deps.maxQueued ?? 2, 0, 1000);
  const maxSpeculations = positiveInt('maxSpeculations', deps.maxSpeculations ?? DEFAULT_MAX_SPECULATIONS, 0, 1000);
  const threshold = deps.threshold ?? 0.6;
  if (!Number.isFinite(threshold) || threshold < 0 || threshold > 1) {
    throw new KiwiError('INVALID_INPUT', `prefetch threshold must be a number from 0 to 1, got ${String(threshold)}; leave it out for 0.6`);
  }
  const { cache, counters } = deps;
  let controller = new AbortController();
  let queue: Task[] = [];
  let running = 0;
  let started = 0;
  const mine = new Set<Speculation>();
  // Queries queued or being predicted: a repeat of one of them adds nothing.
  const pending = new Set<string>();
  let waiters: (() => void)[] = [];

  const pump = (): void => {
    while (running < concurrency && queue.length > 0) {
      const task = queue.shift() as Task;
      running++;
      void run(task, controller.signal).finally(() => {
        pending.delete(task.key);
        running--;
        pump();
      });
    }
    if (running === 0 && queue.length === 0) {
      const done = waiters;
      waiters = [];
      for (const w of done) w();
    }
  };

  async function run(task: Task, signal: AbortSignal): Promise<void> {
    try {
      const { predictions, retrieval, ms } = await deps.predictor.predict(task.snapshot, { previousTool: task.previousTool, signal });
      counters.predictorMs += ms;
      if (signal.aborted) return;
      counters.prefetches++;
      counters.predictions += predictions.length;
      const entry = cache.add(retrieval);
      if (deps.speculate ?? true) await speculate(task.snapshot, entry, predictions, signal);
    } catch (error) {
      if (!signal.aborted) deps.log?.(`prefetch: a prediction failed (${describeError(error)}); the intent will resolve the normal way`);
    }
  }

  /**
   * Runs the confident read-only predictions ahead. Their arguments come from streamed text that
   * may stop inside a value, so a call runs only when every value is closed in the snapshot (see
   * closed-values.ts); the search above ran on the partial text anyway, which costs no tool run.
   */
  async function speculate(snapshot: Snapshot, entry: PrefetchEntry, predictions: Prediction[], signal: AbortSignal): Promise<void> {
    for (const prediction of predictions) {
      if (prediction.confidence < threshold) break; // best first
      const tool = deps.tools.get(prediction.tool);
      // Unknown counts as mutating; a call that waits for a person never runs before it is asked.
      if (tool?.mutatesState !== false || tool.requiresApproval) continue;
      if (!cache.canSpeculate()) return;
      if (started >= maxSpeculations) {
        counters.speculativeRefused++;
        return;
      }
      const resolution = await deps.resolver.complete(snapshot.query, focus(entry.retrieval, prediction), { signal, rulesOnly: true });
      if (signal.aborted) return;
      if (resolution.status !== 'resolved' || resolution.call.tool !== prediction.tool) continue;
      if (!closedValues(snapshot.query, resolution.call, tool)) {
        counters.speculativeRefused++;
        continue;
      }
      if (!startSpeculation(entry, resolution.call)) return;
    }
  }

  /** Starts `call` speculatively when it is read-only and not already running; false when no more may start. */
  function startSpeculation(entry: PrefetchEntry, call: ToolCallSpec): boolean {
    const { tool, arguments: args } = call;
    // A directive runs a thread and a knowledge read costs nothing: neither is worth running ahead, even when a tool shares its name.
    if (call.item !== undefined) return true;
    const known = deps.tools.get(tool);
    if (known?.mutatesState !== false || known.requiresApproval) return true; // unknown counts as mutating
    if (!cache.canSpeculate()) return false;
    const argsKey = canonicalJson(args);
    if (cache.findSpeculation(tool, argsKey, deps.session)) return true; // an earlier snapshot already runs it
    if (started >= maxSpeculations) {
      counters.speculativeRefused++;
      return false;
    }
    const speculation = cache.speculate(entry, {
      tool,
      argsKey,
      session: deps.session,
      run: (callSignal) =>
        deps.call({ target: { tool, args }, caller: { session: deps.session, client: speculativeClient(deps.caller.client), ...(deps.caller.context ? { context: deps.caller.context } : {}), source: 'prefetch' }, run: { signal: callSignal } }),
    });
    if (!speculation) return false;
    started++;
    mine.add(speculation);
    void speculation.outcome.then(() => {
      if (speculation.state !== 'running') mine.delete(speculation);
    });
    return true;
  }

  return {
    speculateCall(entry, call) {
      if (deps.speculate ?? true) startSpeculation(entry, call);
    },
    onSnapshot(snapshot, previousTool) {
      counters.snapshots++;
      const key = normalizeIntent(snapshot.query);
      if (pending.has(key) || cache.get(key)) return; // this text is (being) prefetched already
      pending.add(key);
      queue.push({ key, snapshot, previousTool });
      pump();
      while (queue.length > maxQueued) {
        pending.delete((queue.shift() as Task).key);
        counters.dropped++;
      }
    },
    cancel(options = {}) {
      // Only running tasks hold the signal (queued ones take it when they start).
      if (running > 0) {
        controller.abort(new KiwiError('TOOL_CANCELLED', 'prefetch was cancelled: the stream moved on or ended'));
        controller = new AbortController();
      }
      for (const task of queue) pending.delete(task.key);
      queue = [];
      if (options.speculations ?? true) {
        for (const s of mine) if (s.state === 'running') cache.discard(s);
        mine.clear();
      }
      pump();
    },
    idle() {
      if (running === 0 && queue.length === 0) return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
  };
}

/**
 * The client speculative calls are counted under. Rate limits and the loop detector count per
 * client: guesses must not spend the agent's budget or make its real calls look repeated, or a
 * wrong prediction could change an answer (a rate-limit denial, a "stuck" flag). The real call
 * that reuses a result is charged to the client by `proxy.reuse`, exactly once.
 */
export function speculativeClient(client: string): string {
  return `${client}+prefetch`;
}

/** The retrieval as if `prediction` ranked first with its own confidence, so `complete` fills that tool. */
function focus(retrieval: Retrieval, prediction: Prediction): Retrieval {
  const own = retrieval.candidates.find((c) => c.tool === prediction.tool) ?? { tool: prediction.tool, score: prediction.confidence };
  return { ...retrieval, candidates: [own, ...retrieval.candidates.filter((c) => c.tool !== prediction.tool)], confidence: prediction.confidence };
}

function positiveInt(name: string, value: number, min: number, max: number): number {
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new KiwiError('INVALID_INPUT', `prefetch dispatcher ${name} must be an integer from ${min} to ${max}, got ${String(value)}; leave it out for the default`);
  }
  return value;
}
