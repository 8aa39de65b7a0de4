/**
 * The shipped model from collected rows: the calibration fitted on every dataset, a gate for each
 * target set at the worst dataset left out, and offered only where the same procedure, fitted
 * without each dataset in turn, held the target on it (fold-gates.ts).
 */
import type { ResolverModel } from '../learned-model.js';
import type { TrainingRow } from './collect-rows.js';
import { checkFolds, fitGates, MIN_FOLD_EXECUTED, offered } from './fold-gates.js';

export const GATE_TARGETS = [0.5, 0.6, 0.7, 0.75, 0.8, 0.85, 0.9, 0.95, 0.98, 0.99] as const;

export function trainModel(rows: readonly TrainingRow[], embedder: string, card: Record<string, unknown>, minExecuted: number = MIN_FOLD_EXECUTED): ResolverModel {
  const all = fitGates(rows, GATE_TARGETS, minExecuted);
  const folds = checkFolds(rows, GATE_TARGETS, minExecuted);
  const fitted = GATE_TARGETS.map((precision, i) => ({ precision, threshold: all.thresholds[i] ?? null }));
  return {
    version: 1,
    embedder,
    calibration: all.calibration,
    // A target some fold missed (or could not show, running too few calls) has no gate: it is not offered.
    gates: fitted.map((g, i) => ({ precision: g.precision, threshold: g.threshold !== null && offered(folds, i, minExecuted) ? g.threshold : null })),
    leave_one_out: { min_executed: minExecuted, fitted, folds },
    card,
  };
}
