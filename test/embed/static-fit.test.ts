import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { calibrateBias } from '../../scripts/static-embedder/calibrate-bias.js';
import { chooseVocabulary, countWords, readDebianSynopses } from '../../scripts/static-embedder/debian-corpus.js';
import { fitStaticModel, quantizeRows, teacherAgreement, type FitInput } from '../../scripts/static-embedder/fit-static-model.js';
import { choleskySolve, crossProduct, symmetricEigen } from '../../scripts/static-embedder/linalg.js';
import { createStaticEmbedder } from '../../src/embed/static-embedder.js';
import { writeStaticModel } from '../../src/embed/static-model-file.js';
import { dot, normalize } from '../../src/embed/vector-math.js';

// The build script's maths on a small synthetic corpus: a "teacher" whose sentence vector is the
// normalised sum of fixed random word vectors, which a static model can represent almost exactly.

function seeded(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296 - 0.5;
  };
}

const WORDS = ['send', 'mail', 'message', 'read', 'file', 'disk', 'weather', 'city', 'forecast', 'stock', 'price', 'market', 'image', 'resize', 'photo', 'zip', 'archive', 'compress'];
const TEACHER_DIMS = 12;

function synthetic(): FitInput {
  const random = seeded(7);
  const wordTeacher = WORDS.map(() => Array.from({ length: TEACHER_DIMS }, random));
  const texts: string[] = [];
  for (let i = 0; i < 600; i++) {
    const length = 2 + Math.floor((random() + 0.5) * 4);
    texts.push(Array.from({ length }, () => WORDS[Math.floor((random() + 0.5) * WORDS.length)]!).join(' '));
  }
  const teach = (text: string) => {
    const sum = new Array<number>(TEACHER_DIMS).fill(0);
    for (const w of text.split(' ')) wordTeacher[WORDS.indexOf(w)]!.forEach((x, k) => (sum[k]! += x));
    return normalize(sum)!;
  };
  const counts = countWords(texts);
  const vocab = chooseVocabulary(counts, 100);
  const wordVectors = new Float32Array(vocab.length * TEACHER_DIMS);
  vocab.forEach((w, i) => wordVectors.set(teach(w), i * TEACHER_DIMS));
  const textVectors = new Float32Array(texts.length * TEACHER_DIMS);
  texts.forEach((t, i) => textVectors.set(teach(t), i * TEACHER_DIMS));
  return { vocab, counts: vocab.map((w) => counts.get(w)!), wordVectors, texts, textVectors, teacherDims: TEACHER_DIMS, dimensions: 10, holdoutEvery: 5 };
}

let root: string;
beforeAll(async () => {
  root = await mkdtemp(path.join(tmpdir(), 'kiwi-static-fit-'));
});
afterAll(async () => {
  await rm(root, { recursive: true, force: true });
});

describe('static embedder build: linear algebra', () => {
  it('finds eigenpairs of a symmetric matrix, largest first, and solves positive definite systems', () => {
    const random = seeded(1);
    const n = 7;
    const x = Float32Array.from({ length: 40 * n }, random);
    const a = crossProduct(x, n, x, n, { rows: 40 });
    // The product equals the sum of outer products computed naively.
    expect(a[2 * n + 5]).toBeCloseTo(Array.from({ length: 40 }, (_, r) => x[r * n + 2]! * x[r * n + 5]!).reduce((s, v) => s + v, 0), 10);
    const { values, vectors } = symmetricEigen(a, n);
    for (let k = 0; k < n; k++) {
      if (k > 0) expect(values[k]).toBeLessThanOrEqual(values[k - 1]!);
      for (let i = 0; i < n; i++) {
        let av = 0;
        for (let j = 0; j < n; j++) av += a[i * n + j]! * vectors[k * n + j]!;
        expect(av).toBeCloseTo(values[k]! * vectors[k * n + i]!, 8);
      }
    }
    const b = Float64Array.from({ length: n * 2 }, random);
    const solved = choleskySolve(a, n, b, 2);
    for (let i = 0; i < n; i++) {
      let row = 0;
      for (let j = 0; j < n; j++) row += a[i * n + j]! * solved[j * 2 + 1]!;
      expect(row).toBeCloseTo(b[i * 2 + 1]!, 8);
    }
    expect(() => choleskySolve(new Float64Array([1, 2, 2, 1]), 2, new Float64Array([1, 1]), 1)).toThrow(/not positive definite/);
  });
});

describe('static embedder build: bias calibration', () => {
  it('finds the bias scale that undoes a fit shrunk towards the mean, so pairwise cosines match the teacher again', () => {
    const random = seeded(3);
    const k = 6;
    const n = 60;
    const bias = Array.from({ length: k }, () => 1 + random());
    const spread = Float32Array.from({ length: n * k }, random);
    const teacher = new Float32Array(n * k);
    for (let i = 0; i < n; i++) teacher.set(normalize(Array.from({ length: k }, (_, c) => bias[c]! + spread[i * k + c]!))!, i * k);
    // The student has the teacher's directions with the variable part halved: its texts look more alike.
    const result = calibrateBias({ predictions: spread.map((x) => x * 0.5), bias, teacher, teacherDims: k, n, stride: 1 });
    expect(result.scale).toBe(0.5);
    expect(result.after.mse).toBeLessThan(1e-10);
    expect(result.before.meanCosine).toBeGreaterThan(result.teacherMeanCosine + 0.01);
    expect(result.after.meanCosine).toBeCloseTo(result.teacherMeanCosine, 6);
    expect(result.pairs).toBe((n * (n - 1)) / 2);
  });
});

describe('static embedder build: corpus', () => {
  it('takes the distinct synopses of a dumpavail dump, sorted, and counts words by the shared tokenizer', () => {
    const dump = [
      'Package: b-tool',
      'Description: Zip archive tool',
      ' A long description line that is not used.',
      '',
      'Package: a-tool',
      'Description: compress files with gzip',
      '',
      'Package: a-tool-again',
      'Description: Zip archive tool',
      '',
    ].join('\n');
    const corpus = readDebianSynopses(dump);
    expect(corpus).toEqual({ packages: 3, synopses: ['Zip archive tool', 'compress files with gzip'] });
    const counts = countWords(['getWeather for city', 'weather city city']);
    expect(Object.fromEntries(counts)).toEqual({ get: 1, weather: 2, for: 1, city: 3 });
    expect(chooseVocabulary(counts, 3)).toEqual(['city', 'weather', 'for']);
    expect(chooseVocabulary(counts, 10, 2)).toEqual(['city', 'weather']);
  });
});

describe('static embedder build: fitting', () => {
  it('distils the synthetic teacher: held-out texts follow it closely, through the int8 files and the runtime embedder', async () => {
    const input = synthetic();
    const fit = fitStaticModel(input);
    expect(fit.table).toHaveLength(input.vocab.length * 10);
    expect(fit.report.penalty).toBeGreaterThan(0);
    expect(fit.holdout.length).toBe(120);

    const { scales, rows } = quantizeRows(fit.table, input.vocab.length, 10);
    const dir = path.join(root, 'tiny');
    await writeStaticModel(dir, { id: 'tiny-test', vocab: input.vocab, scales, rows, bias: fit.bias });
    const embedder = await createStaticEmbedder({ modelDir: dir });
    try {
      const heldOut = fit.holdout.map((i) => input.texts[i]!);
      const teacher = new Float32Array(heldOut.length * TEACHER_DIMS);
      fit.holdout.forEach((i, at) => teacher.set(input.textVectors.subarray(i * TEACHER_DIMS, (i + 1) * TEACHER_DIMS), at * TEACHER_DIMS));
      const vectors = await embedder.embed(heldOut);
      const byIndex = new Map(heldOut.map((t, i) => [t, vectors[i]!]));
      const agreement = teacherAgreement((t) => byIndex.get(t)!, heldOut, teacher, TEACHER_DIMS, fit.sentenceBasis, 50);
      expect(agreement.meanCosine).toBeGreaterThan(0.95);
      // The in-memory table (float) and the shipped files (int8) give nearly the same vectors.
      const float = floatEncode(fit.table, fit.bias, input.vocab, heldOut[0]!);
      expect(dot(float, vectors[0]!)).toBeGreaterThan(0.999);
    } finally {
      await embedder.close();
    }
  });

  it('is deterministic: the same input gives the same table', () => {
    const a = fitStaticModel(synthetic());
    const b = fitStaticModel(synthetic());
    expect(Buffer.from(a.table.buffer).equals(Buffer.from(b.table.buffer))).toBe(true);
    expect(Array.from(a.bias)).toEqual(Array.from(b.bias));
  });

  it('refuses inputs whose sizes do not match', () => {
    const input = synthetic();
    expect(() => fitStaticModel({ ...input, dimensions: TEACHER_DIMS + 1 })).toThrow(/cannot exceed/);
    expect(() => fitStaticModel({ ...input, wordVectors: input.wordVectors.subarray(1) })).toThrow(/do not match/);
  });
});

function floatEncode(table: Float32Array, bias: Float32Array, vocab: string[], text: string): Float32Array {
  const d = bias.length;
  const sum = new Array<number>(d).fill(0);
  const words = text.split(' ');
  for (const w of words) {
    const row = vocab.indexOf(w);
    for (let k = 0; k < d; k++) sum[k]! += table[row * d + k]! / words.length;
  }
  return normalize(sum.map((x, k) => x + bias[k]!))!;
}
