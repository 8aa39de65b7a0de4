import { tokenize } from '../../src/embed/static-tokenizer.js';
import { calibrateBias, type BiasCalibration } from './calibrate-bias.js';
import { choleskySolve, columnMeans, crossProduct, multiply, projectRows, symmetricEigen } from './linalg.js';

/**
 * Distils a sentence encoder (the teacher) into a table of word vectors, model2vec style:
 *
 * 1. word space: the teacher's vector of each vocabulary word on its own, centred, PCA to k dims;
 * 2. sentence space: the top k directions of the teacher's sentence vectors (uncentred, so dot
 *    products, i.e. cosines, are what is kept);
 * 3. a text's features: its words' PCA vectors, each times its SIF weight a / (a + p(word)),
 *    averaged over the words it has;
 * 4. a ridge regression (with intercept) from features to the teacher's sentence vectors in that
 *    space, fit on all but every `holdoutEvery`-th sentence; its penalty is the one that does best
 *    on those held-out sentences;
 * 5. the bias that every text starts from: the intercept, scaled so that held-out texts are as
 *    alike to each other as the teacher finds them (calibrate-bias.ts);
 * 6. the table: each word's PCA vector through the ridge map, its SIF weight folded in.
 *
 * The pooling in step 3 is exactly what `createStaticEncoder` does at run time with the table.
 */

export interface FitInput {
  vocab: string[];
  /** Corpus count of each vocabulary word (for p(word)). */
  counts: ArrayLike<number>;
  /** The teacher's unit vector for each vocabulary word alone: vocab.length × teacherDims. */
  wordVectors: Float32Array;
  /** The fitting sentences and the teacher's unit vectors for them (texts.length × teacherDims). */
  texts: string[];
  textVectors: Float32Array;
  teacherDims: number;
  dimensions: number;
  /** SIF's a (default 1e-3, the paper's value). */
  sifA?: number;
  /** Ridge penalties to try, as multiples of the mean feature variance (default 1e-4 … 1). */
  penalties?: number[];
  holdoutEvery?: number;
  log?: (line: string) => void;
}

export interface FitResult {
  /** vocab.length × dimensions; SIF weights folded in. */
  table: Float32Array;
  bias: Float32Array;
  /** dimensions × teacherDims: row c is sentence-space direction c in the teacher's space. */
  sentenceBasis: Float64Array;
  /** Indexes of the held-out texts, which the final fit never saw (for evaluating the shipped table). */
  holdout: number[];
  report: {
    words: number;
    texts: number;
    textsWithoutKnownWords: number;
    wordVarianceKept: number;
    sentenceEnergyKept: number;
    sifA: number;
    penalty: number;
    /** Held-out mean cosine to the teacher, per penalty tried (fit on the other texts). */
    holdoutCosine: { penalty: number; cosine: number }[];
    calibration: BiasCalibration;
  };
}

export function fitStaticModel(input: FitInput): FitResult {
  const { vocab, teacherDims: dt, dimensions: k } = input;
  const v = vocab.length;
  const log = input.log ?? (() => {});
  const sifA = input.sifA ?? 1e-3;
  const penalties = input.penalties ?? [1e-4, 1e-3, 1e-2, 1e-1, 1];
  const holdoutEvery = input.holdoutEvery ?? 10;
  if (k > dt) throw new RangeError(`dimensions (${k}) cannot exceed the teacher's (${dt})`);
  if (input.wordVectors.length !== v * dt || input.textVectors.length !== input.texts.length * dt) throw new RangeError('word or text vectors do not match the vocabulary, texts and teacher dimensions');

  let t = performance.now();
  const lap = (what: string) => {
    log(`${what} (${((performance.now() - t) / 1000).toFixed(1)} s)`);
    t = performance.now();
  };

  const wordMean = columnMeans(input.wordVectors, v, dt);
  const wordEigen = symmetricEigen(crossProduct(input.wordVectors, dt, input.wordVectors, dt, { rows: v, meanA: wordMean, meanB: wordMean }), dt);
  const wordVarianceKept = share(wordEigen.values, k);
  const wordPca = projectRows(input.wordVectors, v, dt, wordEigen.vectors, k, wordMean);
  lap(`word PCA ${dt} → ${k}: ${(100 * wordVarianceKept).toFixed(1)}% of the variance kept`);

  const sentenceEigen = symmetricEigen(crossProduct(input.textVectors, dt, input.textVectors, dt, { rows: input.texts.length }), dt);
  const sentenceBasis = sentenceEigen.vectors.slice(0, k * dt);
  const sentenceEnergyKept = share(sentenceEigen.values, k);
  const targets = projectRows(input.textVectors, input.texts.length, dt, sentenceBasis, k);
  lap(`sentence basis ${dt} → ${k}: ${(100 * sentenceEnergyKept).toFixed(1)}% of the energy kept`);

  const total = Array.from(input.counts).reduce((a, b) => a + b, 0);
  const sif = Float64Array.from(input.counts, (c) => sifA / (sifA + c / Math.max(1, total)));
  const index = new Map(vocab.map((w, i) => [w, i]));
  const features = new Float32Array(input.texts.length * k);
  const usable: number[] = [];
  for (const [s, text] of input.texts.entries()) {
    const rows = tokenize(text).flatMap((w) => index.get(w) ?? []);
    if (rows.length === 0) continue;
    usable.push(s);
    for (const row of rows) {
      const weight = sif[row]! / rows.length;
      for (let c = 0; c < k; c++) features[s * k + c]! += weight * wordPca[row * k + c]!;
    }
  }
  const holdout = usable.filter((s) => s % holdoutEvery === 0);
  const train = usable.filter((s) => s % holdoutEvery !== 0);
  lap(`features for ${usable.length} texts (${input.texts.length - usable.length} without a known word); ${train.length} to fit, ${holdout.length} held out`);

  const holdoutCosine: { penalty: number; cosine: number }[] = [];
  let best = { penalty: penalties[0]!, cosine: -Infinity };
  for (const penalty of penalties) {
    const fit = ridge(features, targets, k, train, penalty);
    const cosine = meanCosine(features, targets, k, holdout, fit);
    holdoutCosine.push({ penalty, cosine: round(cosine) });
    log(`  penalty ${penalty}: held-out mean cosine to the teacher ${cosine.toFixed(4)}`);
    if (cosine > best.cosine) best = { penalty, cosine };
  }
  // Not refit with the held-out texts, so that the build's held-out check of the shipped table stays honest.
  const fit = ridge(features, targets, k, train, best.penalty);
  lap(`ridge: penalty ${best.penalty}`);

  const sample = holdout.slice(0, 1500);
  const sampleFeatures = new Float32Array(sample.length * k);
  const sampleTeacher = new Float32Array(sample.length * dt);
  sample.forEach((s, i) => {
    sampleFeatures.set(features.subarray(s * k, (s + 1) * k), i * k);
    sampleTeacher.set(input.textVectors.subarray(s * dt, (s + 1) * dt), i * dt);
  });
  const calibration = calibrateBias({ predictions: multiply(sampleFeatures, sample.length, k, fit.map, k), bias: fit.intercept, teacher: sampleTeacher, teacherDims: dt, n: sample.length });
  lap(
    `bias scale ${calibration.scale}: mean cosine between two held-out texts ${calibration.before.meanCosine.toFixed(3)} → ${calibration.after.meanCosine.toFixed(3)} (teacher ${calibration.teacherMeanCosine.toFixed(3)}), squared error ${calibration.before.mse.toFixed(4)} → ${calibration.after.mse.toFixed(4)}`,
  );

  const table = multiply(wordPca, v, k, fit.map, k);
  for (let w = 0; w < v; w++) for (let c = 0; c < k; c++) table[w * k + c]! *= sif[w]!;
  return {
    table,
    bias: Float32Array.from(fit.intercept, (x) => x * calibration.scale),
    sentenceBasis,
    holdout,
    report: {
      words: v,
      texts: input.texts.length,
      textsWithoutKnownWords: input.texts.length - usable.length,
      wordVarianceKept: round(wordVarianceKept),
      sentenceEnergyKept: round(sentenceEnergyKept),
      sifA,
      penalty: best.penalty,
      holdoutCosine,
      calibration,
    },
  };
}

interface RidgeFit {
  map: Float64Array;
  intercept: Float64Array;
}

/** Least squares from features to targets over `rows`, with intercept and penalty × mean feature variance. */
function ridge(features: Float32Array, targets: Float32Array, k: number, rows: number[], penalty: number): RidgeFit {
  const meanX = subsetMeans(features, k, rows);
  const meanT = subsetMeans(targets, k, rows);
  const gram = crossProduct(features, k, features, k, { rows: rows.length, pick: rows, meanA: meanX, meanB: meanX });
  let trace = 0;
  for (let i = 0; i < k; i++) trace += gram[i * k + i]!;
  const lambda = penalty * (trace / k);
  for (let i = 0; i < k; i++) gram[i * k + i]! += lambda;
  const map = choleskySolve(gram, k, crossProduct(features, k, targets, k, { rows: rows.length, pick: rows, meanA: meanX, meanB: meanT }), k);
  const intercept = Float64Array.from(meanT);
  for (let i = 0; i < k; i++) for (let c = 0; c < k; c++) intercept[c]! -= meanX[i]! * map[i * k + c]!;
  return { map, intercept };
}

/** Mean over `rows` of the cosine between the prediction and the target (the teacher's cosine, as its vectors are unit length). */
function meanCosine(features: Float32Array, targets: Float32Array, k: number, rows: number[], fit: RidgeFit): number {
  let total = 0;
  const prediction = new Float64Array(k);
  for (const r of rows) {
    prediction.set(fit.intercept);
    for (let i = 0; i < k; i++) {
      const x = features[r * k + i]!;
      for (let c = 0; c < k; c++) prediction[c]! += x * fit.map[i * k + c]!;
    }
    let dot = 0;
    let norm = 0;
    for (let c = 0; c < k; c++) {
      dot += prediction[c]! * targets[r * k + c]!;
      norm += prediction[c]! * prediction[c]!;
    }
    total += norm > 0 ? dot / Math.sqrt(norm) : 0;
  }
  return total / Math.max(1, rows.length);
}

function subsetMeans(rows: Float32Array, d: number, pick: number[]): Float64Array {
  const mean = new Float64Array(d);
  for (const r of pick) for (let j = 0; j < d; j++) mean[j]! += rows[r * d + j]!;
  for (let j = 0; j < d; j++) mean[j]! /= Math.max(1, pick.length);
  return mean;
}

function share(values: Float64Array, k: number): number {
  let top = 0;
  let all = 0;
  values.forEach((x, i) => {
    const positive = Math.max(0, x);
    all += positive;
    if (i < k) top += positive;
  });
  return all > 0 ? top / all : 0;
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}

/** int8 rows with one float scale each (largest magnitude ↦ 127). */
export function quantizeRows(table: Float32Array, rows: number, d: number): { scales: Float32Array; rows: Int8Array } {
  const scales = new Float32Array(rows);
  const q = new Int8Array(rows * d);
  for (let r = 0; r < rows; r++) {
    let max = 0;
    for (let c = 0; c < d; c++) max = Math.max(max, Math.abs(table[r * d + c]!));
    const scale = max / 127;
    scales[r] = scale;
    if (scale === 0) continue;
    for (let c = 0; c < d; c++) q[r * d + c] = Math.round(table[r * d + c]! / scale);
  }
  return { scales, rows: q };
}

/**
 * How well an encoder follows the teacher on texts it was not fit on: the mean cosine to the
 * teacher's vector, and how often the teacher's vector nearest to the student's is the text's own
 * (among the first `maxRetrieval` texts).
 */
export function teacherAgreement(
  encode: (text: string) => Float32Array,
  texts: string[],
  teacherVectors: Float32Array,
  teacherDims: number,
  sentenceBasis: Float64Array,
  maxRetrieval = 2000,
): { meanCosine: number; nearestIsOwn: number } {
  const k = sentenceBasis.length / teacherDims;
  const targets = projectRows(teacherVectors, texts.length, teacherDims, sentenceBasis, k);
  const students = texts.map(encode);
  let cosine = 0;
  students.forEach((s, i) => {
    for (let c = 0; c < k; c++) cosine += s[c]! * targets[i * k + c]!;
  });
  const n = Math.min(maxRetrieval, texts.length);
  let own = 0;
  for (let i = 0; i < n; i++) {
    let bestJ = -1;
    let bestScore = -Infinity;
    for (let j = 0; j < n; j++) {
      let score = 0;
      for (let c = 0; c < k; c++) score += students[i]![c]! * targets[j * k + c]!;
      if (score > bestScore) {
        bestScore = score;
        bestJ = j;
      }
    }
    if (bestJ === i) own++;
  }
  return { meanCosine: round(cosine / Math.max(1, texts.length)), nearestIsOwn: round(own / Math.max(1, n)) };
}
