/**
 * Selective execution measured offline: the recorded resolutions are re-read as if only calls
 * with a confidence at or above a threshold ran, for a sweep of thresholds. No case is resolved
 * again, so the sweep costs nothing; below the resolver's own threshold nothing more runs,
 * because an unresolved case has no call (run with `--set threshold=0` for the whole curve).
 */
import { round } from '../stats.js';
import { executedRight, type CaseResult, type Schemas } from './metrics.js';

/** 0, 0.05, …, 1. */
export const THRESHOLDS: readonly number[] = Array.from({ length: 21 }, (_, i) => round(i * 0.05, 2));

export interface SelectivePoint {
  threshold: number;
  coverage: number | null;
  executed_precision: number | null;
}

/** Coverage over the cases with gold calls; executed precision over every case, no-fit included (FORMAT.md). */
export function selectiveAt(results: readonly CaseResult[], schemas: Schemas, threshold: number): SelectivePoint {
  const runs = (r: CaseResult) => r.resolution.status === 'resolved' && r.resolution.confidence >= threshold;
  const fitting = results.filter((r) => r.case.calls.length > 0);
  const executed = results.filter(runs);
  return {
    threshold,
    coverage: fitting.length ? round(fitting.filter(runs).length / fitting.length) : null,
    executed_precision: executed.length ? round(executed.filter((r) => executedRight(r, schemas)).length / executed.length) : null,
  };
}

/** `[coverage, executed_precision]` at each of THRESHOLDS, in order. */
export function riskCoverage(results: readonly CaseResult[], schemas: Schemas): Array<[number | null, number | null]> {
  return THRESHOLDS.map((t) => {
    const p = selectiveAt(results, schemas, t);
    return [p.coverage, p.executed_precision];
  });
}
