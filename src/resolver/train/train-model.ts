/**
 * Fits the resolver's confidence calibration from collected rows and sets the gate for each
 * target precision from leave-one-dataset-out predictions: every dataset is scored by a
 * calibration fitted without it, so a gate is one that held on a catalog it was not fitted on.
 */
import { calibrate, rawLogit, type ResolverModel } from '../learned-model.js';
import { fitLogistic, type LogisticModel } from '../logistic.js';
import type { TrainingRow } from './collect-rows.js';

export const GATE_TARGETS = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99] as const;

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

/** Executed calls at or above `threshold`, per dataset: how many, and the share entirely right. */
export function precisionAt(scored: readonly ScoredRow[], threshold: number): Map<string, { executed: number; precision: number; coverage: number }> {
  const out = new Map<string, { executed: number; precision: number; coverage: number }>();
  for (const d of new Set(scored.map((s) => s.dataset))) {
    const mine = scored.filter((s) => s.dataset === d);
    const executed = mine.filter((s) => s.confidence >= threshold);
    const fitting = mine.filter((s) => !s.goldRemoved);
    out.set(d, {
      executed: executed.length,
      precision: executed.length ? executed.filter((s) => s.callRight).length / executed.length : Number.NaN,
      coverage: fitting.length ? fitting.filter((s) => s.confidence >= threshold).length / fitting.length : Number.NaN,
    });
  }
  return out;
}

/**
 * The lowest threshold at which executed calls reach `target` precision, the mean over datasets
 * (each weighing the same) of those that execute any; null when no threshold does.
 */
export function thresholdFor(scored: readonly ScoredRow[], target: number): number | null {
  const thresholds = [...new Set(scored.filter((s) => s.confidence >= 0).map((s) => s.confidence))].sort((a, b) => a - b);
  for (const t of thresholds) {
    const points = [...precisionAt(scored, t).values()].filter((p) => p.executed > 0);
    if (points.length > 0 && points.reduce((sum, p) => sum + p.precision, 0) / points.length >= target) return t;
  }
  return null;
}

/** The shipped model: calibrated on every dataset, gated by what held leave-one-dataset-out. */
export function trainModel(rows: readonly TrainingRow[], embedder: string, card: Record<string, unknown>): ResolverModel {
  const outOfFold = leaveOneDatasetOut(rows);
  return {
    version: 1,
    embedder,
    calibration: fitCalibration(rows),
    gates: GATE_TARGETS.map((precision) => ({ precision, threshold: thresholdFor(outOfFold, precision) })),
    card,
  };
}
