/**
 * The shipped model's offered gates (each held on every dataset left out, `kiwi model train`) applied to
 * the recorded resolutions of every split, on one-call and no-fit cases (a single call cannot be a
 * whole multi-call answer).
 */
import type { ResolverModel } from '../../src/resolver/learned-model.js';
import { round } from '../stats.js';
import type { CaseResult, Schemas } from './metrics.js';
import { selectiveAt } from './risk-coverage.js';

export interface DatasetRun {
  name: string;
  schemas: Schemas;
  /** Split name → its recorded results (no-fit cases included). */
  splits: Record<string, CaseResult[]>;
}

const singleCall = (results: readonly CaseResult[]): CaseResult[] => results.filter((r) => r.case.calls.length <= 1);

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
  if (gates.length > 0) printGateTable(gates);
  if (unreached.length > 0) console.log(`\nnot offered: target_precision ${unreached.join(', ')}: some dataset left out of fitting did not hold it (the fold table below), so no call from plain words runs there on the rules' confidence alone`);
}

function printGateTable(gates: readonly ShippedGate[]): void {
  console.log(`\nthe shipped model's gates (target_precision → calibrated threshold), one-call and no-fit cases, cover/execP:`);
  const f = (x: number | null): string => (x === null ? '-' : round(x).toFixed(3));
  const names = [...new Set(gates.flatMap((g) => Object.keys(g.splits)))];
  console.log(`${'dataset/split'.padEnd(28)} ${gates.map((g) => `${g.precision}@${g.threshold.toFixed(2)}`.padStart(13)).join(' ')}`);
  for (const name of names) console.log(`${name.padEnd(28)} ${gates.map((g) => `${f(g.splits[name]?.coverage ?? null)}/${f(g.splits[name]?.executed_precision ?? null)}`.padStart(13)).join(' ')}`);
}
