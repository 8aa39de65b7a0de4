import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { calibrate, gateFor, loadResolverModel, offeredGates, type ResolverModel } from '../../src/resolver/learned-model.js';
import { fitLogistic, predict } from '../../src/resolver/logistic.js';
import type { TrainingRow } from '../../src/resolver/train/collect-rows.js';
import { leaveOneDatasetOut } from '../../src/resolver/train/fit-calibration.js';
import { trainModel } from '../../src/resolver/train/train-model.js';

const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-model-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const MODEL: ResolverModel = {
  version: 1,
  embedder: 'use-lite-512',
  calibration: { mean: [0], std: [1], weights: [1], bias: 0 },
  gates: [
    { precision: 0.7, threshold: 0.4 },
    { precision: 0.9, threshold: 0.8 },
    { precision: 0.95, threshold: null },
  ],
  card: {},
};

describe('logistic regression', () => {
  it('recovers the probabilities of a known logistic model from its samples', () => {
    // p = sigmoid(2x - 1) at x = 0, 0.5, 1, with outcomes in exactly those proportions.
    const rows: number[][] = [];
    const labels: number[] = [];
    for (const [x, positives] of [[0, 27], [0.5, 50], [1, 73]] as const) {
      for (let i = 0; i < 100; i++) {
        rows.push([x]);
        labels.push(i < positives ? 1 : 0);
      }
    }
    const model = fitLogistic(rows, labels, { l2: 0 });
    expect(predict(model, [0])).toBeCloseTo(0.27, 2);
    expect(predict(model, [0.5])).toBeCloseTo(0.5, 2);
    expect(predict(model, [1])).toBeCloseTo(0.73, 2);
  });

  it('weighs rows by their weight, and refuses rows and labels that do not pair up', () => {
    const model = fitLogistic([[0], [0], [1], [1]], [1, 0, 1, 0], { l2: 0, rowWeights: [3, 1, 1, 3] });
    expect(predict(model, [0])).toBeCloseTo(0.75, 3);
    expect(predict(model, [1])).toBeCloseTo(0.25, 3);
    expect(() => fitLogistic([[0]], [1, 0])).toThrow(/1 rows and 2 labels/);
    expect(() => fitLogistic([], [])).toThrow(/at least one/);
  });
});

describe('the learned confidence', () => {
  it('maps a raw confidence through the calibration, and raw 0 and 1 stay finite', () => {
    expect(calibrate(MODEL, 0.5)).toBeCloseTo(0.5, 6);
    expect(calibrate(MODEL, 0.8)).toBeCloseTo(0.8, 6);
    expect(calibrate(MODEL, 0)).toBeGreaterThan(0);
    expect(calibrate(MODEL, 1)).toBeLessThan(1);
  });

  it('gates at the lowest offered target at or above the one asked for; null where none is offered; 0 runs everything', () => {
    expect(gateFor(MODEL, 0.7)).toBe(0.4);
    expect(gateFor(MODEL, 0.75)).toBe(0.8);
    expect(gateFor(MODEL, 0.9)).toBe(0.8);
    expect(gateFor(MODEL, 0.95)).toBeNull();
    expect(gateFor(MODEL, 0.99)).toBeNull();
    expect(gateFor(MODEL, 0)).toBe(0);
    // 0.8 not offered, 0.85 offered: a gate that held 0.85 on every fold holds 0.8 too.
    const gapped = { gates: [{ precision: 0.8, threshold: null }, { precision: 0.85, threshold: 0.7 }, { precision: 0.9, threshold: null }] };
    expect(gateFor(gapped, 0.8)).toBe(0.7);
    expect(gateFor(gapped, 0.85)).toBe(0.7);
    expect(gateFor(gapped, 0.9)).toBeNull();
    expect(offeredGates(gapped)).toEqual([{ precision: 0.85, threshold: 0.7 }]);
  });

  it('loads a model file, and says how to rebuild one that is missing, not JSON, of another shape or too big', async () => {
    const good = path.join(dir, 'good.json');
    writeFileSync(good, JSON.stringify(MODEL));
    expect(await loadResolverModel(good)).toEqual(MODEL);
    await expect(loadResolverModel(path.join(dir, 'none.json'))).rejects.toThrow(/cannot read the resolver model .*none\.json \(ENOENT\); rebuild it with `kiwi model train`/);
    const broken = path.join(dir, 'broken.json');
    writeFileSync(broken, '{"version": 1,');
    await expect(loadResolverModel(broken)).rejects.toThrow(/is not JSON .*kiwi model train/);
    const other = path.join(dir, 'other.json');
    writeFileSync(other, JSON.stringify({ ...MODEL, calibration: { ...MODEL.calibration, weights: [1, 2] } }));
    await expect(loadResolverModel(other)).rejects.toThrow(/calibration\.weights: .*kiwi model train/);
    const unreached = path.join(dir, 'unreached.json');
    writeFileSync(unreached, JSON.stringify({ ...MODEL, gates: [{ precision: 1.5, threshold: 0.9 }] }));
    await expect(loadResolverModel(unreached)).rejects.toThrow(/gates\.0\.precision/);
    const big = path.join(dir, 'big.json');
    writeFileSync(big, JSON.stringify({ ...MODEL, card: { padding: 'x'.repeat(300 * 1024) } }));
    await expect(loadResolverModel(big)).rejects.toThrow(/bytes, over the 262144/);
  });
});

/** Rows whose calls are right with probability `raw` exactly, per dataset; `shift` makes a dataset over-confident. */
function rows(dataset: string, shift: number): TrainingRow[] {
  const out: TrainingRow[] = [];
  for (const raw of [0.2, 0.4, 0.6, 0.8, 0.95]) {
    for (let i = 0; i < 20; i++) {
      out.push({ dataset, split: 'dev', id: `${dataset}-${raw}-${i}`, goldRemoved: false, resolved: true, raw, callRight: i < Math.round(20 * Math.max(0, raw - shift)) });
    }
  }
  out.push({ dataset, split: 'dev', id: `${dataset}-unresolved`, goldRemoved: true, resolved: false, raw: 0.9, callRight: false });
  return out;
}

describe('training the calibration', () => {
  it('calibrates, scores each dataset leave-one-dataset-out, and gives unresolved rows no confidence', () => {
    const all = [...rows('a', 0), ...rows('b', 0), ...rows('c', 0)];
    const scored = leaveOneDatasetOut(all);
    expect(scored.find((s) => !s.resolved)?.confidence).toBe(-1);
    const model = trainModel(all, 'test-embedder', { note: 'synthetic' });
    expect(model).toMatchObject({ version: 1, embedder: 'test-embedder', card: { note: 'synthetic' } });
    expect(calibrate(model, 0.95)).toBeGreaterThan(calibrate(model, 0.2));
  });

  it('refuses to set gates from one dataset: nothing would be left out', () => {
    expect(() => leaveOneDatasetOut(rows('a', 0))).toThrow(/at least two datasets; got a/);
  });
});
