import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { isKiwiError } from '../../src/base/errors.js';
import {
  createTransitionModel,
  loadTransitionModel,
  saveTransitionModel,
  transitionModelFromJSON,
  type LearnedTransitionModel,
} from '../../src/prefetch/transition-model.js';

/** Three sessions: search → read → count → read → read; search → read; search → read → read. */
function trained(options?: Parameters<typeof createTransitionModel>[0]): LearnedTransitionModel {
  const model = createTransitionModel(options);
  for (const session of [
    ['search_files', 'read_file', 'word_count', 'read_file', 'read_file'],
    ['search_files', 'read_file'],
    ['search_files', 'read_file', 'read_file'],
  ]) {
    let prev: string | null = null;
    for (const tool of session) {
      model.observe(prev, tool);
      prev = tool;
    }
  }
  return model;
}

const TOOLS = ['search_files', 'read_file', 'word_count'];
const sum = (model: LearnedTransitionModel, prev: string | null, tools = TOOLS): number => tools.reduce((s, t) => s + model.probability(prev, t), 0);

function expectInvalid(fn: () => unknown, message: RegExp): void {
  try {
    fn();
  } catch (error) {
    expect(isKiwiError(error, 'INVALID_INPUT')).toBe(true);
    expect((error as Error).message).toMatch(message);
    return;
  }
  throw new Error('expected an INVALID_INPUT error');
}

describe('transition model math', () => {
  it('an empty model predicts nothing', () => {
    const model = createTransitionModel();
    expect(model.next(null, 3)).toEqual([]);
    expect(model.next('read_file', 3)).toEqual([]);
    expect(model.probability(null, 'read_file')).toBe(0);
    expect(model.stats()).toEqual({ tools: 0, pairs: 0, observations: 0 });
  });

  it('interpolates each row with the unigram distribution (α = 2)', () => {
    const model = trained();
    // unigram: read_file 6/10, search_files 3/10, word_count 1/10
    expect(model.probability('search_files', 'read_file')).toBeCloseTo((3 + 2 * 0.6) / (3 + 2), 12);
    expect(model.probability('search_files', 'word_count')).toBeCloseTo((0 + 2 * 0.1) / 5, 12);
    expect(model.probability(null, 'search_files')).toBeCloseTo((3 + 2 * 0.3) / 5, 12);
    expect(model.probability('read_file', 'read_file')).toBeCloseTo((2 + 2 * 0.6) / (3 + 2), 12);
    expect(model.stats()).toEqual({ tools: 3, pairs: 5, observations: 10 });
  });

  it('probabilities sum to 1 for the start, every known tool and an unknown one', () => {
    const model = trained();
    for (const prev of [null, ...TOOLS, 'never_seen']) expect(sum(model, prev)).toBeCloseTo(1, 12);
    expect(model.probability(null, 'never_seen')).toBe(0);
  });

  it('next() returns the top k, most likely first, with the same p as probability()', () => {
    const model = trained();
    const top = model.next('search_files', 2);
    expect(top.map((t) => t.tool)).toEqual(['read_file', 'search_files']);
    for (const t of top) expect(t.p).toBeCloseTo(model.probability('search_files', t.tool), 12);
    expect(model.next('search_files', 10)).toHaveLength(3);
    expect(model.next(null, 1)).toEqual([{ tool: 'search_files', p: expect.closeTo(0.72, 12) }]);
    expect(model.next(null, 0)).toEqual([]);
    const all = model.next('word_count', 3);
    expect(all.reduce((s, t) => s + t.p, 0)).toBeCloseTo(1, 12);
  });

  it('backs off to the unigram distribution for an unknown previous tool, and leans on it for a rare one', () => {
    const model = trained();
    expect(model.next('never_seen', 3)).toEqual([
      { tool: 'read_file', p: expect.closeTo(0.6, 12) },
      { tool: 'search_files', p: expect.closeTo(0.3, 12) },
      { tool: 'word_count', p: expect.closeTo(0.1, 12) },
    ]);
    // word_count was followed by read_file once: one observation moves it only part of the way.
    expect(model.probability('word_count', 'read_file')).toBeCloseTo((1 + 2 * 0.6) / 3, 12);
    for (let i = 0; i < 100; i++) model.observe('word_count', 'search_files');
    // Seen a hundred times, the row speaks for itself.
    expect(model.next('word_count', 1)[0]?.tool).toBe('search_files');
    expect(model.probability('word_count', 'search_files')).toBeGreaterThan(0.9);
  });

  it('smoothing 0 is the plain maximum-likelihood estimate and predicts only seen successors', () => {
    const model = trained({ smoothing: 0 });
    expect(model.next('search_files', 3)).toEqual([{ tool: 'read_file', p: 1 }]);
    expect(model.probability('read_file', 'read_file')).toBeCloseTo(2 / 3, 12);
    expect(sum(model, 'read_file')).toBeCloseTo(1, 12);
  });

  it('caps distinct tools: the least-called is forgotten everywhere and the rest still sum to 1', () => {
    const model = trained({ maxTools: 3 });
    model.observe('read_file', 'grep');
    expect(model.stats().tools).toBe(3);
    expect(model.probability(null, 'word_count')).toBe(0);
    expect(model.toJSON().transitions.map(([prev]) => prev)).not.toContain('word_count');
    expect(JSON.stringify(model.toJSON())).not.toContain('word_count');
    const known = ['search_files', 'read_file', 'grep'];
    for (const prev of [null, ...known]) expect(sum(model, prev, known)).toBeCloseTo(1, 12);
    // The previous tool of the call being learned is never the one forgotten.
    const small = createTransitionModel({ maxTools: 2 });
    small.observe(null, 'a');
    small.observe(null, 'b');
    small.observe(null, 'b');
    small.observe('a', 'c');
    expect(small.next('a', 5).map((t) => t.tool)).toEqual(['c', 'a']);
  });

  it('caps successors per tool, dropping the least seen', () => {
    const model = createTransitionModel({ maxSuccessors: 2 });
    model.observe(null, 'a');
    model.observe('a', 'b');
    model.observe('a', 'b');
    model.observe('a', 'c');
    model.observe('a', 'd');
    const row = model.toJSON().transitions.find(([prev]) => prev === 'a')?.[1];
    expect(row).toEqual([['b', 2], ['d', 1]]);
    expect(sum(model, 'a', ['a', 'b', 'c', 'd'])).toBeCloseTo(1, 12);
  });

  it('rejects bad tool ids, k and options with clear errors', () => {
    const model = createTransitionModel();
    expectInvalid(() => model.observe(null, ''), /tool id of 1 to 256 characters/);
    expectInvalid(() => model.observe('', 'a'), /previousTool/);
    expectInvalid(() => model.observe(null, 'x'.repeat(257)), /tool id/);
    expectInvalid(() => model.next(null, -1), /k >= 0/);
    expectInvalid(() => model.next(null, 1.5), /k >= 0/);
    expectInvalid(() => createTransitionModel({ smoothing: -1 }), /smoothing is -1/);
    expectInvalid(() => createTransitionModel({ smoothing: Number.NaN }), /smoothing/);
    expectInvalid(() => createTransitionModel({ maxTools: 0 }), /maxTools is 0: use a whole number/);
    expectInvalid(() => createTransitionModel({ maxSuccessors: 2.5 }), /maxSuccessors/);
  });

  it('lists the top transitions by count with their p', () => {
    const top = trained().topTransitions(3);
    expect(top.map((t) => [t.from, t.to, t.count])).toEqual([
      ['search_files', 'read_file', 3],
      [null, 'search_files', 3],
      ['read_file', 'read_file', 2],
    ]);
    expect(top[0]?.p).toBeCloseTo(0.84, 12);
  });
});

describe('transition model JSON', () => {
  it('round-trips through JSON with the same predictions, and keeps learning', () => {
    const model = trained({ smoothing: 1.5, maxTools: 50, maxSuccessors: 8 });
    const copy = transitionModelFromJSON(JSON.parse(JSON.stringify(model.toJSON())));
    expect(copy.toJSON()).toEqual(model.toJSON());
    for (const prev of [null, ...TOOLS, 'x']) expect(copy.next(prev, 3)).toEqual(model.next(prev, 3));
    copy.observe('word_count', 'grep');
    expect(copy.stats()).toEqual({ tools: 4, pairs: 6, observations: 11 });
  });

  it('keeps any tool name as data, __proto__ included', () => {
    const model = createTransitionModel();
    model.observe(null, '__proto__');
    model.observe('__proto__', 'constructor');
    const copy = transitionModelFromJSON(JSON.parse(JSON.stringify(model.toJSON())));
    expect(copy.next('__proto__', 1)[0]?.tool).toBe('constructor');
    expect(({} as Record<string, unknown>)['polluted']).toBeUndefined();
  });

  it('rejects a broken model, naming the problem and saying to retrain', () => {
    const good = trained().toJSON();
    const cases: [unknown, RegExp][] = [
      [null, /\(root\)/],
      [{ ...good, version: 2 }, /format version 2, this Kiwi reads version 1/],
      [{ ...good, format: 'other' }, /format/],
      [{ ...good, tools: [['read_file', -1]] }, /tools\.0\.1/],
      [{ ...good, tools: [...good.tools, ['read_file', 1]] }, /"read_file" is listed twice/],
      [{ ...good, start: [['ghost', 1]] }, /start names tool "ghost", which is not in tools/],
      [{ ...good, transitions: [['ghost', [['read_file', 1]]]] }, /transitions from "ghost": the tool is not in tools/],
      [{ ...good, maxTools: 2 }, /3 tools, more than its maxTools 2/],
      [{ ...good, extra: true }, /extra/],
    ];
    for (const [value, message] of cases) {
      expectInvalid(() => transitionModelFromJSON(value), message);
      expectInvalid(() => transitionModelFromJSON(value), /re-run `kiwi predictor train`/);
    }
  });
});

describe('saving and loading a transition model', () => {
  let dir: string | undefined;
  afterEach(() => {
    if (dir) rmSync(dir, { recursive: true, force: true });
    dir = undefined;
  });
  const temp = (): string => (dir = mkdtempSync(path.join(tmpdir(), 'kiwi-transitions-')));

  it('writes atomically into a new folder and loads the same model', async () => {
    const file = path.join(temp(), 'models', 'predictor.json');
    const model = trained();
    await saveTransitionModel(file, model);
    expect(readdirSync(path.dirname(file))).toEqual(['predictor.json']);
    const loaded = await loadTransitionModel(file);
    expect(loaded?.toJSON()).toEqual(model.toJSON());
    // Overwriting replaces the file whole.
    model.observe('read_file', 'grep');
    await saveTransitionModel(file, model);
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(model.toJSON());
  });

  it('a missing file is undefined; a corrupt one is a clear error', async () => {
    const root = temp();
    expect(await loadTransitionModel(path.join(root, 'none.json'))).toBeUndefined();
    const file = path.join(root, 'predictor.json');
    writeFileSync(file, '{"format": "kiwi-transition-model", "vers');
    await expect(loadTransitionModel(file)).rejects.toThrow(/predictor model .*predictor\.json is not valid JSON .*re-run `kiwi predictor train`/);
    writeFileSync(file, JSON.stringify({ ...trained().toJSON(), version: 7 }));
    await expect(loadTransitionModel(file)).rejects.toThrow(/predictor\.json is not valid \(it has format version 7.*re-run `kiwi predictor train`/);
  });

  it('refuses an aborted save or load', async () => {
    const file = path.join(temp(), 'predictor.json');
    const signal = AbortSignal.abort();
    await expect(saveTransitionModel(file, trained(), { signal })).rejects.toThrow(/cancelled/);
    await expect(loadTransitionModel(file, { signal })).rejects.toThrow(/cancelled/);
  });
});
