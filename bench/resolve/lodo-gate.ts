/**
 * The whole-call gate measured as it would carry over to a catalog nobody tuned it on: for each
 * dataset, the threshold is chosen from the OTHER datasets' `dev` splits only (the lowest
 * threshold whose pooled executed precision reaches the target), then applied to this dataset's
 * splits. Computed from recorded resolutions, on one-call and no-fit cases (a single call cannot
 * be a whole multi-call answer).
 */
import type { ResolverModel } from '../../src/resolver/learned-model.js';
import { round } from '../stats.js';
import { executedRight, type CaseResult, type Schemas } from './metrics.js';
import { selectiveAt, THRESHOLDS } from './risk-coverage.js';

export interface DatasetRun {
  name: string;
  schemas: Schemas;
  /** Split name → its recorded results (no-fit cases included). */
  splits: Record<string, CaseResult[]>;
}

export interface LodoGate {
  dataset: string;
  /** Chosen without this dataset; null when no threshold reaches the target on the others. */
  threshold: number | null;
  trained_on: string[];
  splits: Record<string, { coverage: number | null; executed_precision: number | null }>;
}

const singleCall = (results: readonly CaseResult[]): CaseResult[] => results.filter((r) => r.case.calls.length <= 1);

export function lodoGates(runs: readonly DatasetRun[], target: number): LodoGate[] {
  return runs.map((run) => {
    const others = runs.filter((o) => o !== run && o.splits['dev'] !== undefined);
    const threshold = THRESHOLDS.find((t) => {
      let executed = 0;
      let right = 0;
      for (const o of others) {
        for (const r of singleCall(o.splits['dev'] as CaseResult[])) {
          if (r.resolution.status !== 'resolved' || r.resolution.confidence < t) continue;
          executed++;
          if (executedRight(r, o.schemas)) right++;
        }
      }
      return executed > 0 && right / executed >= target;
    });
    const splits: LodoGate['splits'] = {};
    for (const [name, results] of Object.entries(run.splits)) {
      const point = threshold === undefined ? null : selectiveAt(singleCall(results), run.schemas, threshold);
      splits[name] = { coverage: point?.coverage ?? null, executed_precision: point?.executed_precision ?? null };
    }
    return { dataset: run.name, threshold: threshold ?? null, trained_on: others.map((o) => o.name), splits };
  });
}

export function printLodoGates(gates: readonly LodoGate[], target: number): void {
  console.log(`\nwhole-call gate chosen leave-one-dataset-out (lowest threshold reaching executed precision ${target} on the other datasets' dev splits), one-call and no-fit cases:`);
  console.log(`${'dataset/split'.padEnd(28)} ${'gate'.padStart(5)} ${'cover'.padStart(6)} ${'execP'.padStart(6)}  chosen on`);
  const f = (x: number | null): string => (x === null ? '-' : round(x).toFixed(3)).padStart(6);
  for (const g of gates) {
    for (const [split, p] of Object.entries(g.splits)) {
      console.log(`${`${g.dataset}/${split}`.padEnd(28)} ${(g.threshold === null ? 'none' : g.threshold.toFixed(2)).padStart(5)} ${f(p.coverage)} ${f(p.executed_precision)}  ${g.trained_on.join(', ') || '-'}`);
    }
  }
}

export interface ShippedGate {
  precision: number;
  threshold: number;
  splits: Record<string, { coverage: number | null; executed_precision: number | null }>;
}

/**
 * What each `target_precision` does with the shipped model: its gate applied to every split (the
 * resolutions' confidences are the model's calibrated ones). Targets no gate reached are left out:
 * at those, no call from plain words runs.
 */
export function shippedGates(runs: readonly DatasetRun[], model: Pick<ResolverModel, 'gates'>): ShippedGate[] {
  return model.gates.flatMap((g) => {
    if (g.threshold === null) return [];
    const splits: ShippedGate['splits'] = {};
    for (const run of runs) {
      for (const [name, results] of Object.entries(run.splits)) {
        const p = selectiveAt(singleCall(results), run.schemas, g.threshold);
        splits[`${run.name}/${name}`] = { coverage: p.coverage, executed_precision: p.executed_precision };
      }
    }
    return [{ precision: g.precision, threshold: g.threshold, splits }];
  });
}

export function printShippedGates(gates: readonly ShippedGate[], unreached: readonly number[]): void {
  console.log(`\nthe shipped model's gates (target_precision → calibrated threshold), one-call and no-fit cases, cover/execP:`);
  const f = (x: number | null): string => (x === null ? '-' : round(x).toFixed(3));
  const names = [...new Set(gates.flatMap((g) => Object.keys(g.splits)))];
  console.log(`${'dataset/split'.padEnd(28)} ${gates.map((g) => `${g.precision}@${g.threshold.toFixed(2)}`.padStart(13)).join(' ')}`);
  for (const name of names) console.log(`${name.padEnd(28)} ${gates.map((g) => `${f(g.splits[name]?.coverage ?? null)}/${f(g.splits[name]?.executed_precision ?? null)}`.padStart(13)).join(' ')}`);
  if (unreached.length > 0) console.log(`no gate for target_precision ${unreached.join(', ')}: no threshold reached it leave-one-dataset-out, so no call from plain words runs there`);
}
