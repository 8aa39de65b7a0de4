import { addUsage, createUsageTally, type PriceOf } from '../budgets/usage-summary.js';
import { isKiwiError } from '../base/errors.js';
import type { AnnealingRules } from '../policy/annealing-rules.js';
import type { ThreadOutcome, ThreadStart } from '../threads/run-thread.js';
import type { ThreadStore } from '../threads/thread-store.js';
import type { AnnealOutcome } from './anneal-directive.js';

/**
 * Annealing that happens (the policy's `annealing: { on_failure: true }`): when a directive's
 * thread fails in a way the policy names, its directive is annealed from that thread, as `kiwi
 * directives anneal --thread` does (checked, signed, written beside the old file), and the run is
 * retried once on the new version. The caller gets the retry's outcome, which names the failed
 * thread; a refused annealing leaves the failure as it was, saying why. A retry is never retried.
 */
export function annealOnFailure(
  run: (start: ThreadStart) => Promise<ThreadOutcome>,
  deps: {
    rules: AnnealingRules | undefined;
    anneal(name: string, thread: string, signal: AbortSignal | undefined): Promise<AnnealOutcome>;
    /** Prices the annealing's own model call (the gateway's price table); absent, it is counted unpriced. */
    priceOf?: PriceOf;
  },
): (start: ThreadStart) => Promise<ThreadOutcome> {
  const failures: readonly string[] = deps.rules?.failures ?? [];
  return async (start) => {
    const failed = await run(start);
    if (start.retry !== undefined || failed.failure === undefined || !failures.includes(failed.failure) || start.signal?.aborted) return failed;
    let annealed: AnnealOutcome;
    try {
      annealed = await deps.anneal(start.directive, failed.id, start.signal);
    } catch (error) {
      if (!isKiwiError(error)) throw error;
      return { ...failed, anneal: { failed_thread: failed.id, refused: error.message } };
    }
    const retried = await run({ ...start, retry: { of: failed.id, directive: annealed.directive } });
    // What the caller's run cost: both runs and the model call that wrote the new version.
    const annealing = createUsageTally(deps.priceOf ?? (() => undefined));
    if (annealed.used !== undefined) annealing.add(annealed.used.model, annealed.used.usage);
    return { ...retried, usage: addUsage(addUsage(failed.usage, retried.usage), annealing.summary()), anneal: { failed_thread: failed.id, from_version: annealed.previous.version, version: annealed.version } };
  };
}

export interface AnnealCounts {
  /** Retries run on an annealed version, and how many of them succeeded. */
  retried: number;
  succeeded: number;
}

/** How annealing on failure has done, per directive, from the transcripts (the newest `scan` threads). */
export async function annealCounts(store: ThreadStore, scan = 1000): Promise<Map<string, AnnealCounts>> {
  const counts = new Map<string, AnnealCounts>();
  for (const { header, end } of await store.list(scan)) {
    if (header.retry_of === undefined) continue;
    const c = counts.get(header.directive) ?? { retried: 0, succeeded: 0 };
    c.retried++;
    if (end?.status === 'completed' && end.failure === undefined) c.succeeded++;
    counts.set(header.directive, c);
  }
  return counts;
}
