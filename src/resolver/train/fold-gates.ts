/**
 * Which `target_precision`s the gateway may offer. A gate is the lowest calibrated confidence at
 * which, leave-one-dataset-out, every dataset ran at least MIN_FOLD_EXECUTED calls and at least
 * the target's share of them was entirely right: the worst dataset decides, not the mean. Then
 * the whole procedure is checked the same way one level up: for each dataset, the calibration and
 * gates are fitted on the others alone and applied to it. A target is offered only where every
 * such fold ran enough calls and held; the figures of each fold are kept in the model, so that the
 * promise can be read, not taken on trust.
 */
import type { LogisticModel } from '../logistic.js';
import type { TrainingRow } from './collect-rows.js';
import { fitCalibration, leaveOneDatasetOut, scoreRows, type ScoredRow } from './fit-calibration.js';

/**
 * Below this many executed calls a dataset cannot show that a threshold holds: at 20 calls, one
 * call more or less moves executed precision by 5 points, the size of the steps between targets.
 */
export const MIN_FOLD_EXECUTED = 20;

/** At one threshold on one dataset: calls that ran and how many were right; fitting intents and how many ran. */
export interface FoldCounts {
  executed: number;
  right: number;
  /** Intents some tool of the catalog fits (the gold tool was not taken out). */
  fitting: number;
  covered: number;
}

/** The rows of one dataset, sorted by confidence (highest first), counted at any threshold in log time. */
interface SortedDataset {
  confidences: number[];
  /** [k]: among the first k rows, those entirely right / fitting. */
  right: number[];
  fitting: number[];
}

function sortDataset(rows: readonly ScoredRow[]): SortedDataset {
  const sorted = [...rows].sort((a, b) => b.confidence - a.confidence);
  const right = [0];
  const fitting = [0];
  for (const r of sorted) {
    right.push((right.at(-1) as number) + (r.callRight ? 1 : 0));
    fitting.push((fitting.at(-1) as number) + (r.goldRemoved ? 0 : 1));
  }
  return { confidences: sorted.map((r) => r.confidence), right, fitting };
}

function countAt(d: SortedDataset, threshold: number): FoldCounts {
  // The first row below the threshold: everything before it runs. Unresolved rows score -1 and never run.
  let lo = 0;
  let hi = d.confidences.length;
  while (lo < hi) {
    const mid = (lo + hi) >> 1;
    if ((d.confidences[mid] as number) >= threshold) lo = mid + 1;
    else hi = mid;
  }
  return { executed: lo, right: d.right[lo] as number, fitting: d.fitting.at(-1) as number, covered: d.fitting[lo] as number };
}

/** Counts at `threshold` over scored rows, per dataset. */
export function countsAt(scored: readonly ScoredRow[], threshold: number): Map<string, FoldCounts> {
  return new Map([...byDataset(scored)].map(([d, rows]) => [d, countAt(sortDataset(rows), threshold)]));
}

/** Whether these counts show the target: enough calls ran, and enough of them were right. */
export function holds(c: FoldCounts, target: number, minExecuted: number = MIN_FOLD_EXECUTED): boolean {
  // Compared as counts, so that 16 of 20 is 0.8 and not 0.7999….
  return c.executed >= minExecuted && c.right >= target * c.executed - 1e-9;
}

/**
 * The lowest threshold at which every dataset of `scored` (each scored by a calibration that did
 * not see it) holds the target; null where no threshold does.
 */
export function worstFoldThreshold(scored: readonly ScoredRow[], target: number, minExecuted: number = MIN_FOLD_EXECUTED): number | null {
  const datasets = [...byDataset(scored).values()].map(sortDataset);
  const thresholds = [...new Set(scored.filter((s) => s.confidence >= 0).map((s) => s.confidence))].sort((a, b) => a - b);
  for (const t of thresholds) if (datasets.every((d) => holds(countAt(d, t), target, minExecuted))) return t;
  return null;
}

export interface FittedGates {
  calibration: LogisticModel;
  /** Per target, in the order asked: the gate, or null where none held on every dataset left out. */
  thresholds: Array<number | null>;
}

/** Calibration on every row, gates from leave-one-dataset-out predictions at the worst dataset. */
export function fitGates(rows: readonly TrainingRow[], targets: readonly number[], minExecuted: number = MIN_FOLD_EXECUTED): FittedGates {
  const outOfFold = leaveOneDatasetOut(rows);
  return { calibration: fitCalibration(rows), thresholds: targets.map((t) => worstFoldThreshold(outOfFold, t, minExecuted)) };
}

export interface FoldGate extends FoldCounts {
  precision: number;
  /** The gate fitted without this dataset; null where none held there (then nothing ran). */
  threshold: number | null;
}

export interface Fold {
  dataset: string;
  /** Fitted without this dataset: what scored it. */
  calibration: LogisticModel;
  gates: FoldGate[];
}

/**
 * Each dataset left out of the whole fit (calibration and gates) and scored by it. Needs three
 * datasets: the gates of each fold are themselves set leave-one-dataset-out on the others.
 */
export function checkFolds(rows: readonly TrainingRow[], targets: readonly number[], minExecuted: number = MIN_FOLD_EXECUTED): Fold[] {
  const datasets = [...byDataset(rows).keys()];
  if (datasets.length < 3) throw new Error(`checking gates on a dataset left out needs at least three datasets (each fold's gates are set leave-one-dataset-out on the others); got ${datasets.join(', ') || 'none'}`);
  return datasets.map((dataset) => {
    const fitted = fitGates(rows.filter((r) => r.dataset !== dataset), targets, minExecuted);
    const mine = sortDataset(scoreRows(fitted.calibration, rows.filter((r) => r.dataset === dataset)));
    const gates = targets.map((precision, i) => {
      const threshold = fitted.thresholds[i] ?? null;
      const counts = countAt(mine, threshold ?? Number.POSITIVE_INFINITY);
      return { precision, threshold, ...counts };
    });
    return { dataset, calibration: fitted.calibration, gates };
  });
}

/** A target is offered where a gate was fitted on every dataset and every fold held it. */
export function offered(folds: readonly Fold[], index: number, minExecuted: number = MIN_FOLD_EXECUTED): boolean {
  return folds.every((f) => {
    const g = f.gates[index];
    return g !== undefined && g.threshold !== null && holds(g, g.precision, minExecuted);
  });
}

function byDataset<T extends { dataset: string }>(rows: readonly T[]): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const r of rows) {
    const list = out.get(r.dataset);
    if (list) list.push(r);
    else out.set(r.dataset, [r]);
  }
  return out;
}
