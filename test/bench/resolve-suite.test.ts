import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { argumentKind, argumentTypes } from '../../bench/resolve/argument-types.js';
import { spreadSample, type BenchCase, type GoldCall } from '../../src/datasets/case-file.js';
import { findDatasets } from '../../src/datasets/find-datasets.js';
import { groupMetrics, groupResults, type CaseResult } from '../../bench/resolve/metrics.js';
import { printResolveTable, RESOLVE_LEGEND } from '../../bench/resolve/resolve-table.js';
import { fallbackSummary, parseFallback } from '../../bench/resolve/resolve-catalog.js';
import { shippedGates, type DatasetRun } from '../../bench/resolve/shipped-gates.js';
import { printSuiteFolds, suiteFolds } from '../../bench/resolve/fold-gates.js';
import type { ResolverModel } from '../../src/resolver/learned-model.js';
import { riskCoverage, selectiveAt, THRESHOLDS } from '../../bench/resolve/risk-coverage.js';
import type { ToolParameter } from '../../src/registry/types.js';
import type { Resolution } from '../../src/resolver/types.js';

const TIMINGS = { embedMs: 0, searchMs: 0, fillMs: 0, totalMs: 0 };

function result(calls: GoldCall[], got: { tool: string; args?: Record<string, unknown>; confidence: number } | { unresolved: true; confidence: number; top?: string }): CaseResult {
  const c: BenchCase = { id: 'x', intent: 'x', calls, groups: {}, file: 'x.jsonl' };
  const resolution: Resolution =
    'unresolved' in got
      ? { status: 'unresolved', reason: 'r', missing: [], confidence: got.confidence, candidates: got.top ? [{ tool: got.top, score: 0.5 }] : [], timings: TIMINGS, notes: [] }
      : { status: 'resolved', call: { tool: got.tool, arguments: got.args ?? {} }, confidence: got.confidence, candidates: [{ tool: got.tool, score: 0.9 }], timings: TIMINGS, notes: [] };
  return { case: c, resolution, ms: 1 };
}

const schemas = new Map([
  ['a', ['q']],
  ['b', ['n']],
]);

// One case of each outcome: a right call, a wrong argument, a multi-call case run as one call, a no-fit case run, an abstention.
const RESULTS = [
  result([{ name: 'a', arguments: { q: ['x'] } }], { tool: 'a', args: { q: 'x' }, confidence: 0.9 }),
  result([{ name: 'a', arguments: { q: ['x'] } }], { tool: 'a', args: { q: 'y' }, confidence: 0.6 }),
  result([{ name: 'a', arguments: null }, { name: 'b', arguments: null }], { tool: 'a', confidence: 0.95 }),
  result([], { tool: 'b', args: { n: 1 }, confidence: 0.7 }),
  result([], { unresolved: true, confidence: 0.2, top: 'a' }),
  result([{ name: 'b', arguments: { n: [1] } }], { unresolved: true, confidence: 0.4, top: 'b' }),
];

describe('selective execution, computed offline', () => {
  it('counts coverage over fitting cases and executed precision over every executed call', () => {
    // Fitting: 4, of which 3 ran; ran: 4, of which only the first is fully right.
    expect(selectiveAt(RESULTS, schemas, 0)).toEqual({ threshold: 0, coverage: 0.75, executed_precision: 0.25 });
    const g = groupMetrics(RESULTS, schemas);
    expect(g.coverage).toBe(0.75);
    expect(g.executed_precision).toBe(0.25);
    expect(g.abstention_accuracy).toBe(0.5);
  });

  it('runs only calls at or above the threshold, and has no precision where nothing runs', () => {
    expect(selectiveAt(RESULTS, schemas, 0.9)).toEqual({ threshold: 0.9, coverage: 0.5, executed_precision: 0.5 });
    expect(selectiveAt(RESULTS, schemas, 0.96)).toEqual({ threshold: 0.96, coverage: 0, executed_precision: null });
  });

  it('sweeps 21 thresholds from 0 to 1', () => {
    expect(THRESHOLDS).toHaveLength(21);
    expect(THRESHOLDS[1]).toBe(0.05);
    expect(THRESHOLDS.at(-1)).toBe(1);
    const curve = riskCoverage(RESULTS, schemas);
    expect(curve[0]).toEqual([0.75, 0.25]);
    expect(curve[14]).toEqual([0.5, 0.333]); // 0.7: the no-fit call still runs
    expect(curve[20]).toEqual([0, null]);
  });

  it('keeps recall@20 apart from recall@10', () => {
    const candidates = Array.from({ length: 20 }, (_, i) => ({ tool: `t${i}`, score: 1 - i / 40 }));
    const r = result([{ name: 't15', arguments: null }], { unresolved: true, confidence: 0.1 });
    const g = groupMetrics([{ ...r, resolution: { ...r.resolution, candidates } }], schemas);
    expect([g.recall_at_10, g.recall_at_20]).toEqual([0, 1]);
  });
});

describe('argument accuracy by kind', () => {
  const p = (type: ToolParameter['type'], extra: Partial<ToolParameter> = {}): ToolParameter => ({ name: 'p', type, required: true, ...extra });

  it('names the kind from the schema, and dates from the format or the gold value', () => {
    expect(argumentKind(p('integer'), [3])).toBe('number');
    expect(argumentKind(p('string', { enum: ['a'] }), ['a'])).toBe('enum');
    expect(argumentKind(p('integer', { enum: [1, 2] }), [1])).toBe('enum');
    expect(argumentKind(p('string', { format: 'date' }), ['tomorrow'])).toBe('date');
    expect(argumentKind(p('string', { format: 'date-time' }), ['now'])).toBe('date');
    expect(argumentKind(p('string', { format: 'time' }), ['noon'])).toBe('date');
    for (const v of ['2024-03-05', '2024-03-05T10:00:00Z', '03/05/2024', '10:30', 'March 5, 2024', '5 Mar 2024']) expect(argumentKind(p('string'), ['', v])).toBe('date');
    for (const v of ['Marketing', 'December', 'may', '12345']) expect(argumentKind(p('string'), [v])).toBe('string');
    expect(argumentKind(p('object'), [{}])).toBe('object');
    expect(argumentKind(undefined, ['x'])).toBe('unknown');
  });

  it('scores only resolved one-call cases whose tool is right', () => {
    const parameters = new Map<string, ToolParameter[]>([
      ['a', [{ name: 'q', type: 'string', required: true }, { name: 'd', type: 'string', required: false }]],
      ['b', [{ name: 'n', type: 'integer', required: true }]],
    ]);
    const report = argumentTypes(
      [
        result([{ name: 'a', arguments: { q: ['x'], d: ['2024-01-02'] } }], { tool: 'a', args: { q: 'x', d: '2024-01-03' }, confidence: 0.9 }),
        result([{ name: 'a', arguments: { q: ['y'], d: ['', '2024-01-02'] } }], { tool: 'a', args: { q: 'y' }, confidence: 0.9 }),
        result([{ name: 'b', arguments: { n: [1] } }], { tool: 'a', args: { q: 'x' }, confidence: 0.9 }),
        result([{ name: 'b', arguments: { n: [1] } }], { unresolved: true, confidence: 0.9 }),
        result([{ name: 'b', arguments: { n: [1], extra: ['z'] } }], { tool: 'b', args: { n: '1' }, confidence: 0.9 }),
      ],
      parameters,
    );
    expect(report.string).toEqual({ n: 2, accuracy: 1 });
    expect(report.date).toEqual({ n: 2, accuracy: 0.5 });
    expect(report.number).toEqual({ n: 1, accuracy: 1 });
    expect(report.unknown).toEqual({ n: 1, accuracy: 0 });
    expect(report.boolean).toEqual({ n: 0, accuracy: null });
    expect(report.all).toEqual({ n: 6, accuracy: 0.667 });
  });
});

describe('datasets folder', () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'kiwi-suite-'));
  afterAll(() => rmSync(dir, { recursive: true, force: true }));
  const put = (file: string) => {
    mkdirSync(path.dirname(path.join(dir, file)), { recursive: true });
    writeFileSync(path.join(dir, file), '');
  };

  it('finds every folder with a catalog, dev first, then test splits, then the rest', async () => {
    for (const f of ['b/catalog.jsonl', 'b/multi.jsonl', 'b/test_real.jsonl', 'b/dev.jsonl', 'b/notes.md', 'a/catalog.jsonl', 'a/dev.jsonl', 'raw/x.jsonl', 'c/catalog.jsonl']) put(f);
    const found = await findDatasets(dir);
    expect(found.map((d) => [d.name, d.splits.map((s) => s.name)])).toEqual([
      ['a', ['dev']],
      ['b', ['dev', 'test_real', 'multi']],
    ]);
    expect(found[1]?.catalog).toBe(path.join(dir, 'b', 'catalog.jsonl'));
  });

  it('says what to pass when the folder is missing or holds no dataset', async () => {
    await expect(findDatasets(path.join(dir, 'nowhere'))).rejects.toThrow(/cannot read the datasets folder .*nowhere \(it does not exist\); pass --datasets DIR/);
    await expect(findDatasets(path.join(dir, 'raw'))).rejects.toThrow(/no dataset in .*raw: expected folders each holding catalog.jsonl/);
  });
});

describe('quick runs', () => {
  it('spreads a limited sample over the whole split', () => {
    const xs = Array.from({ length: 10 }, (_, i) => i);
    expect(spreadSample(xs, 4)).toEqual([0, 2, 5, 7]);
    expect(spreadSample(xs, 20)).toEqual(xs);
  });
});

describe("the shipped model's gates", () => {
  it('applies each reached gate to every split, one-call and no-fit cases only, and leaves out the targets none reached', () => {
    const right = (confidence: number) => result([{ name: 'a', arguments: { q: ['x'] } }], { tool: 'a', args: { q: 'x' }, confidence });
    const wrong = (confidence: number) => result([{ name: 'a', arguments: { q: ['x'] } }], { tool: 'a', args: { q: 'y' }, confidence });
    const multi = result([{ name: 'a', arguments: null }, { name: 'b', arguments: null }], { tool: 'a', args: {}, confidence: 0.99 });
    const runs: DatasetRun[] = [
      { name: 'one', schemas, splits: { dev: [right(0.9), right(0.8), wrong(0.7), wrong(0.5), multi] } },
      { name: 'two', schemas, splits: { test: [right(0.7), wrong(0.9)] } },
    ];
    const gates = shippedGates(runs, { gates: [{ precision: 0.7, threshold: 0.6 }, { precision: 0.9, threshold: 0.75 }, { precision: 0.95, threshold: null }] });
    expect(gates.map((g) => g.precision)).toEqual([0.7, 0.9]);
    expect(gates[0]?.splits).toEqual({ 'one/dev': { coverage: 0.75, executed_precision: 0.667 }, 'two/test': { coverage: 1, executed_precision: 0.5 } });
    expect(gates[1]?.splits).toEqual({ 'one/dev': { coverage: 0.5, executed_precision: 1 }, 'two/test': { coverage: 0.5, executed_precision: 0 } });
  });
});

describe('the resolve bench table', () => {
  it('counts every case of a group, a no-fit group included, and says what the columns cover', () => {
    const lines: string[] = [];
    printResolveTable(groupResults(RESULTS, schemas), (line) => lines.push(line));
    const cases = (group: string) => lines.find((l) => l.startsWith(`${group} `))?.slice(31, 36).trim();
    expect(lines[0]?.slice(31, 36)).toBe('cases');
    expect([cases('all'), cases('gold_calls=single'), cases('gold_calls=multi'), cases('gold_calls=none')]).toEqual(['6', '3', '1', '2']);
    expect(lines.slice(-RESOLVE_LEGEND.length)).toEqual(RESOLVE_LEGEND);
  });
});

describe('the fallback model in the resolve benches', () => {
  it('takes --fallback-url and --fallback-model together or not at all', () => {
    expect(parseFallback(undefined, undefined)).toBeUndefined();
    expect(parseFallback('http://127.0.0.1:11434/v1', 'qwen3:0.6b')).toEqual({ url: 'http://127.0.0.1:11434/v1', model: 'qwen3:0.6b' });
    expect(() => parseFallback('http://127.0.0.1:11434/v1', undefined)).toThrow(/go together/);
    expect(() => parseFallback(undefined, 'qwen3:0.6b')).toThrow(/go together/);
  });

  it("sums what the model was asked and what it cost over a run's resolutions", () => {
    const asked = (outcome: 'called' | 'refused' | 'declined' | 'failed', ms: number, tokens?: [number, number]): CaseResult => {
      const r = result([{ name: 'a', arguments: null }], { unresolved: true, confidence: 0.4 });
      r.resolution.fallback = { model: 'm', upstream: 'u', outcome, ms, ...(tokens ? { inputTokens: tokens[0], outputTokens: tokens[1] } : {}) };
      return r;
    };
    expect(fallbackSummary([...RESULTS, asked('called', 200, [400, 20]), asked('refused', 150, [380, 25]), asked('failed', 1000)])).toEqual({
      asked: 3,
      outcomes: { called: 1, refused: 1, declined: 0, failed: 1 },
      seconds: 1.35,
      input_tokens: 780,
      output_tokens: 45,
    });
  });
});

describe('the fold table of the suite', () => {
  const identity = { mean: [0], std: [1], weights: [1], bias: 0 };
  const model: ResolverModel = {
    version: 1,
    embedder: 'hash',
    calibration: identity,
    gates: [
      { precision: 0.5, threshold: 0.5 },
      { precision: 0.9, threshold: null },
    ],
    leave_one_out: {
      min_executed: 2,
      fitted: [
        { precision: 0.5, threshold: 0.5 },
        { precision: 0.9, threshold: 0.95 },
      ],
      folds: [
        {
          dataset: 'one',
          // Fitted without `one`: its confidences are read 1 logit lower (raw 0.9 → about 0.77).
          calibration: { ...identity, bias: -1 },
          gates: [
            { precision: 0.5, threshold: 0.5, executed: 0, right: 0, fitting: 0, covered: 0 },
            { precision: 0.9, threshold: null, executed: 0, right: 0, fitting: 0, covered: 0 },
          ],
        },
      ],
    },
    card: {},
  };

  it("applies each fold's own calibration and gates to every split of its dataset, counting the no-fit intents once", () => {
    const noFit = result([], { tool: 'b', args: { n: 1 }, confidence: 0.8 });
    const runs: DatasetRun[] = [
      {
        name: 'one',
        schemas,
        splits: {
          dev: [result([{ name: 'a', arguments: { q: ['x'] } }], { tool: 'a', args: { q: 'x' }, confidence: 0.9 }), result([{ name: 'a', arguments: { q: ['x'] } }], { tool: 'a', args: { q: 'x' }, confidence: 0.6 }), noFit],
          test: [result([{ name: 'a', arguments: { q: ['x'] } }], { tool: 'a', args: { q: 'x' }, confidence: 1 }), noFit],
        },
      },
      { name: 'two', schemas, splits: { multi: [noFit] } },
    ];
    const folds = suiteFolds(runs, model);
    // Refitted, 0.9 → 0.77 and 0.8 → 0.60 run at 0.5, 0.6 → 0.36 does not; the stated call (1) always runs.
    expect(folds?.folds).toEqual([
      {
        dataset: 'one',
        splits: ['dev', 'test'],
        gates: [
          { precision: 0.5, threshold: 0.5, executed: 3, right: 2, fitting: 3, covered: 2, executed_precision: 0.667, coverage: 0.667 },
          { precision: 0.9, threshold: null, executed: 0, right: 0, fitting: 3, covered: 0, executed_precision: null, coverage: 0 },
        ],
      },
    ]);
    expect(folds?.targets).toEqual([
      { precision: 0.5, gate: 0.5, held_on_every_fold: true },
      { precision: 0.9, gate: 0.95, held_on_every_fold: false },
    ]);
    expect(folds?.offered).toEqual([0.5]);
    expect(folds?.not_folds).toEqual([expect.stringMatching(/^two: the model has no fold for it/)]);
    const printed: string[] = [];
    printSuiteFolds(folds, (line) => printed.push(line));
    expect(printed.join('\n')).toMatch(/0\.5 +0\.500 +0\.667\/0\.667 3 +yes\n0\.9 +0\.950 +no gate ! +no/);
    expect(printed.at(-1)).toBe('targets the shipped model offers (every fold of its training held them): 0.5');
  });

  it('says so when the model has no fold figures', () => {
    const printed: string[] = [];
    printSuiteFolds(suiteFolds([], { ...model, leave_one_out: undefined } as unknown as ResolverModel), (line) => printed.push(line));
    expect(printed.join('\n')).toMatch(/carries no fold figures .*kiwi model train/);
  });
});
