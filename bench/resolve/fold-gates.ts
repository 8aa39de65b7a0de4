/**
 * The shipped model's promise measured on the suite's own runs: for each dataset the model was
 * checked on, the calibration and gates fitted without it (kept in the model's `leave_one_out`)
 * applied to every split of it, test splits included, on one-call and no-fit cases. The suite
 * records confidences calibrated by the shipped model; each is taken back to the raw whole-call
 * confidence and calibrated again by the fold's own calibration.
 */
import { offeredGates, type ResolverModel } from '../../src/resolver/learned-model.js';
import { predict, type LogisticModel } from '../../src/resolver/logistic.js';
import { holds } from '../../src/resolver/train/fold-gates.js';
import { foldTableLines, type FoldCell } from '../../src/resolver/train/fold-table.js';
import { round } from '../stats.js';
import { executedRight, type CaseResult } from './metrics.js';
import type { DatasetRun } from './shipped-gates.js';

export interface SuiteFoldGate extends FoldCell {
  precision: number;
  executed_precision: number | null;
  coverage: number | null;
}

export interface SuiteFolds {
  min_executed: number;
  /** The targets the model offers (every fold of its training held them). */
  offered: number[];
  /** Per target, the gate fitted on every dataset (null: none held), and whether every fold here held it. */
  targets: Array<{ precision: number; gate: number | null; held_on_every_fold: boolean }>;
  folds: Array<{ dataset: string; splits: string[]; gates: SuiteFoldGate[] }>;
  /** Datasets of the suite the model has no fold for, with why. */
  not_folds: string[];
}

/** The logit of the raw confidence behind a calibrated one: the calibration run backwards. */
function rawLogitOf(calibration: LogisticModel, calibrated: number): number {
  const [w, mean, std] = [calibration.weights[0] as number, calibration.mean[0] as number, calibration.std[0] as number];
  return mean + (std * (Math.log(calibrated / (1 - calibrated)) - calibration.bias)) / w;
}

export function suiteFolds(runs: readonly DatasetRun[], model: ResolverModel): SuiteFolds | null {
  const loo = model.leave_one_out;
  if (!loo) return null;
  if (!((model.calibration.weights[0] as number) > 0)) throw new Error("the shipped model's calibration does not rise with the raw confidence: its confidences cannot be taken back to raw ones");
  const fitted = loo.fitted;
  const folds = loo.folds.flatMap((fold) => {
    const run = runs.find((r) => r.name === fold.dataset);
    if (!run) return [];
    // The no-fit intents are added to every split: counted once.
    const results = [...new Set(Object.values(run.splits).flat())].filter((r) => r.case.calls.length <= 1);
    // A call that states everything has confidence 1 and runs at any gate.
    const confidence = (r: CaseResult): number => (r.resolution.confidence >= 1 ? 1 : predict(fold.calibration, [rawLogitOf(model.calibration, Math.max(r.resolution.confidence, 1e-12))]));
    const fitting = results.filter((r) => r.case.calls.length > 0);
    const gates = fitted.map((f, i) => {
      const threshold = fold.gates[i]?.threshold ?? null;
      const runs = (r: CaseResult): boolean => threshold !== null && r.resolution.status === 'resolved' && confidence(r) >= threshold;
      const executed = results.filter(runs);
      const right = executed.filter((r) => executedRight(r, run.schemas)).length;
      const covered = fitting.filter(runs).length;
      return {
        precision: f.precision,
        threshold,
        executed: executed.length,
        right,
        fitting: fitting.length,
        covered,
        executed_precision: executed.length ? round(right / executed.length) : null,
        coverage: fitting.length ? round(covered / fitting.length) : null,
      };
    });
    return [{ dataset: fold.dataset, splits: Object.keys(run.splits), gates }];
  });
  const targets = fitted.map((f, i) => ({
    precision: f.precision,
    gate: f.threshold,
    held_on_every_fold: folds.length > 0 && folds.every((fold) => fold.gates[i]?.threshold !== null && holds(fold.gates[i] as FoldCell, f.precision, loo.min_executed)),
  }));
  const not_folds = runs.filter((r) => !loo.folds.some((f) => f.dataset === r.name)).map((r) => `${r.name}: the model has no fold for it (its dev split gave no training row), so its gates were fitted without it already`);
  return { min_executed: loo.min_executed, offered: offeredGates(model).map((g) => g.precision), targets, folds, not_folds };
}

export function printSuiteFolds(folds: SuiteFolds | null, log: (line: string) => void = console.log): void {
  if (!folds) {
    log(`\nthe shipped model carries no fold figures (built before each gate was checked on every dataset left out): rebuild it with \`kiwi model train\``);
    return;
  }
  log(`\nleave-one-dataset-out gates on every split of each dataset (one-call and no-fit cases; calibration and gates fitted without that dataset):`);
  const rows = folds.targets.map((t, i) => ({ precision: t.precision, gate: t.gate, cells: folds.folds.map((f) => f.gates[i] as FoldCell) }));
  for (const line of foldTableLines(folds.folds.map((f) => f.dataset), rows, folds.min_executed, 'held')) log(line);
  for (const why of folds.not_folds) log(why);
  log(`targets the shipped model offers (every fold of its training held them): ${folds.offered.length ? folds.offered.join(', ') : 'none'}`);
}
