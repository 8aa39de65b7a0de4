import { describe, expect, it } from 'vitest';
import type { TrainingRow } from '../../src/resolver/train/collect-rows.js';
import type { ScoredRow } from '../../src/resolver/train/fit-calibration.js';
import { countsAt, holds, MIN_FOLD_EXECUTED, offered, worstFoldThreshold, type Fold } from '../../src/resolver/train/fold-gates.js';
import { foldTableLines } from '../../src/resolver/train/fold-table.js';
import { trainModel } from '../../src/resolver/train/train-model.js';

/** `n` scored rows of a dataset at one confidence, `right` of them entirely right. */
function scored(dataset: string, confidence: number, n: number, right: number): ScoredRow[] {
  return Array.from({ length: n }, (_, i) => ({ dataset, split: 'dev', id: `${dataset}-${confidence}-${i}`, goldRemoved: false, resolved: true, raw: confidence, callRight: i < right, confidence }));
}

/** Rows whose calls are right with probability `raw` exactly, `perLevel` at each level; `shift` makes a dataset over-confident. */
function rows(dataset: string, options: { shift?: number; perLevel?: number } = {}): TrainingRow[] {
  const perLevel = options.perLevel ?? 20;
  const out: TrainingRow[] = [];
  for (const raw of [0.2, 0.4, 0.6, 0.8, 0.95]) {
    for (let i = 0; i < perLevel; i++) {
      out.push({ dataset, split: 'dev', id: `${dataset}-${raw}-${i}`, goldRemoved: false, resolved: true, raw, callRight: i < Math.round(perLevel * Math.max(0, raw - (options.shift ?? 0))) });
    }
  }
  out.push({ dataset, split: 'dev', id: `${dataset}-no-fit`, goldRemoved: true, resolved: false, raw: 0.9, callRight: false });
  return out;
}

const target = (model: ReturnType<typeof trainModel>, precision: number) => model.gates.find((g) => g.precision === precision)?.threshold;

describe('whether a fold shows a target', () => {
  it('needs enough calls, and enough of them right, compared as counts', () => {
    expect(MIN_FOLD_EXECUTED).toBe(20);
    expect(holds({ executed: 20, right: 16, fitting: 40, covered: 20 }, 0.8)).toBe(true);
    expect(holds({ executed: 20, right: 15, fitting: 40, covered: 20 }, 0.8)).toBe(false);
    // Every call right, but 19 calls cannot show it.
    expect(holds({ executed: 19, right: 19, fitting: 40, covered: 19 }, 0.8)).toBe(false);
    expect(holds({ executed: 5, right: 5, fitting: 40, covered: 5 }, 0.8, 5)).toBe(true);
  });

  it('counts calls at or above a threshold per dataset; unresolved rows never run, no-fit rows count against precision only', () => {
    const all = [...scored('a', 0.9, 10, 9), ...scored('a', 0.5, 10, 5), { ...scored('a', 0.95, 1, 0)[0] as ScoredRow, goldRemoved: true }, { ...scored('a', 0, 1, 0)[0] as ScoredRow, resolved: false, confidence: -1 }];
    expect(countsAt(all, 0.9).get('a')).toEqual({ executed: 11, right: 9, fitting: 21, covered: 10 });
    expect(countsAt(all, 0).get('a')).toEqual({ executed: 21, right: 14, fitting: 21, covered: 20 });
  });
});

describe('the gate at the worst dataset', () => {
  it('is the lowest threshold at which every dataset holds the target, not the mean', () => {
    // From 0.5 up, a is right 36 of 40 and b 31 of 40: the mean (0.84) would pass 0.8 there, b does not.
    const all = [...scored('a', 0.5, 20, 18), ...scored('a', 0.8, 20, 18), ...scored('b', 0.5, 20, 12), ...scored('b', 0.8, 20, 19)];
    expect(worstFoldThreshold(all, 0.8)).toBe(0.8);
    expect(worstFoldThreshold(all, 0.75)).toBe(0.5);
    expect(worstFoldThreshold(all, 0.99)).toBeNull();
  });

  it('finds none where a dataset runs too few calls to show it', () => {
    const all = [...scored('a', 0.8, 40, 40), ...scored('b', 0.8, 19, 19)];
    expect(worstFoldThreshold(all, 0.8)).toBeNull();
    expect(worstFoldThreshold(all, 0.8, 19)).toBe(0.8);
  });
});

describe('a target offered only where every fold held it', () => {
  const fold = (dataset: string, cell: { threshold: number | null; executed: number; right: number }): Fold => ({
    dataset,
    calibration: { mean: [0], std: [1], weights: [1], bias: 0 },
    gates: [{ precision: 0.8, fitting: 100, covered: cell.executed, ...cell }],
  });

  it('is offered when every fold meets it, and not when one misses, runs too few calls or found no gate', () => {
    const good = [fold('a', { threshold: 0.6, executed: 50, right: 45 }), fold('b', { threshold: 0.7, executed: 20, right: 16 })];
    expect(offered(good, 0)).toBe(true);
    expect(offered([...good, fold('c', { threshold: 0.6, executed: 50, right: 39 })], 0)).toBe(false);
    expect(offered([...good, fold('c', { threshold: 0.6, executed: 19, right: 19 })], 0)).toBe(false);
    expect(offered([...good, fold('c', { threshold: null, executed: 0, right: 0 })], 0)).toBe(false);
  });

  it('in the model: every target up to the one each left-out dataset holds, each fold kept with its figures', () => {
    const model = trainModel(['a', 'b', 'c', 'd'].flatMap((d) => rows(d)), 'test', {});
    // The top level alone: 19 of 20 right on every dataset, fitted without it.
    expect(target(model, 0.95)).toBeTypeOf('number');
    expect(target(model, 0.98)).toBeNull();
    expect(model.leave_one_out?.folds.map((f) => f.dataset)).toEqual(['a', 'b', 'c', 'd']);
    const i95 = model.gates.findIndex((g) => g.precision === 0.95);
    for (const f of model.leave_one_out?.folds ?? []) expect(f.gates[i95]).toMatchObject({ precision: 0.95, executed: 20, right: 19, fitting: 100, covered: 20 });
  });

  it('in the model: a dataset the others cannot speak for takes the target away', () => {
    // d is right 0.9 of the time where the others are right 0.95: 0.95 held on a, b and c, missed on d.
    const model = trainModel([...['a', 'b', 'c'].flatMap((d) => rows(d)), ...rows('d', { shift: 0.05 })], 'test', {});
    expect(target(model, 0.95)).toBeNull();
    expect(target(model, 0.9)).toBeTypeOf('number');
    const i95 = model.gates.findIndex((g) => g.precision === 0.95);
    expect(model.leave_one_out?.fitted[i95]?.threshold).toBeNull();
    // d's fold: the gate fitted on a, b and c alone runs d's top level, and 18 of its 20 are right.
    expect(model.leave_one_out?.folds.find((f) => f.dataset === 'd')?.gates[i95]).toMatchObject({ executed: 20, right: 18 });
  });

  it('in the model: a dataset that runs too few calls offers nothing it cannot show', () => {
    // e has 5 intents at each level: from 0.8 up it runs 10 calls, too few to show 0.8 or more.
    const model = trainModel([...['a', 'b', 'c', 'd'].flatMap((d) => rows(d)), ...rows('e', { perLevel: 5 })], 'test', {});
    for (const p of [0.8, 0.85, 0.9, 0.95]) expect(target(model, p)).toBeNull();
    expect(target(model, 0.5)).toBeTypeOf('number');
  });

  it('refuses to check folds with fewer than three datasets', () => {
    expect(() => trainModel([...rows('a'), ...rows('b')], 'test', {})).toThrow(/at least three datasets/);
  });

  it('prints one row per target and one column per fold, marking what does not show the target', () => {
    const lines = foldTableLines(
      ['a', 'b'],
      [
        { precision: 0.8, gate: 0.6, cells: [{ threshold: 0.6, executed: 50, right: 45, fitting: 100, covered: 48 }, { threshold: 0.7, executed: 19, right: 19, fitting: 40, covered: 19 }] },
        { precision: 0.9, gate: null, cells: [{ threshold: null, executed: 0, right: 0, fitting: 100, covered: 0 }, { threshold: 0.9, executed: 20, right: 18, fitting: 40, covered: 20 }] },
      ],
      20,
    );
    expect(lines[1]).toMatch(/^0\.8\s+0\.600\s+0\.900\/0\.480 50\s+1\.000\/0\.475 19 !\s+no$/);
    expect(lines[2]).toMatch(/^0\.9\s+none\s+no gate !\s+0\.900\/0\.500 20\s+no$/);
  });
});
