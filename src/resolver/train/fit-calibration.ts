/**
 * The resolver's confidence calibration fitted from collected rows, and rows scored by one:
 * leave-one-dataset-out, every dataset by a calibration fitted without it.
 */
import { calibrate, rawLogit } from '../learned-model.js';
import { fitLogistic, type LogisticModel } from '../logistic.js';
import type { TrainingRow } from './collect-rows.js';

/** A row as a fitted calibration sees it: unresolved rows are never executed, so they get -1. */
export interface ScoredRow extends TrainingRow {
  confidence: number;
}

/** Every dataset weighs the same in a fit, whatever its size: a big catalog's habits must not become the model's. */
function datasetWeights(rows: readonly TrainingRow[]): number[] {
  const counts = new Map<string, number>();
  for (const r of rows) counts.set(r.dataset, (counts.get(r.dataset) ?? 0) + 1);
  const mean = rows.length / Math.max(1, counts.size);
  return rows.map((r) => mean / (counts.get(r.dataset) as number));
}

export function fitCalibration(rows: readonly TrainingRow[]): LogisticModel {
  const resolved = rows.filter((r) => r.resolved);
  if (resolved.length === 0) throw new Error('no resolved call among the training rows: nothing to calibrate');
  return fitLogistic(
    resolved.map((r) => [rawLogit(r.raw)]),
    resolved.map((r) => (r.callRight ? 1 : 0)),
    { rowWeights: datasetWeights(resolved) },
  );
}

export function scoreRows(calibration: LogisticModel, rows: readonly TrainingRow[]): ScoredRow[] {
  return rows.map((r) => ({ ...r, confidence: r.resolved ? calibrate({ calibration }, r.raw) : -1 }));
}

/** Each dataset scored by a calibration fitted on the others only. */
export function leaveOneDatasetOut(rows: readonly TrainingRow[]): ScoredRow[] {
  const datasets = [...new Set(rows.map((r) => r.dataset))];
  if (datasets.length < 2) throw new Error(`leave-one-dataset-out needs at least two datasets; got ${datasets.join(', ') || 'none'}`);
  return datasets.flatMap((d) => scoreRows(fitCalibration(rows.filter((r) => r.dataset !== d)), rows.filter((r) => r.dataset === d)));
}
