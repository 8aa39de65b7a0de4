/**
 * L2-regularised logistic regression, fitted by Newton's method on standardised features. Small on
 * purpose: a few dozen weights that a person can read, that fit in seconds, and whose outputs are
 * probabilities (log loss is what it minimises), which the confidence gate needs.
 */

export interface LogisticModel {
  /** Per feature: mean and standard deviation of the training rows, applied before the weights. */
  mean: number[];
  std: number[];
  weights: number[];
  bias: number;
}

export interface FitOptions {
  /** L2 penalty on the standardised weights (not the bias). */
  l2?: number;
  /** Per-row weights (default 1): to balance datasets of different sizes. */
  rowWeights?: readonly number[];
  iterations?: number;
}

export function predict(model: LogisticModel, x: readonly number[]): number {
  let z = model.bias;
  for (let j = 0; j < model.weights.length; j++) z += (model.weights[j] as number) * (((x[j] as number) - (model.mean[j] as number)) / (model.std[j] as number));
  return 1 / (1 + Math.exp(-z));
}

export function fitLogistic(rows: readonly (readonly number[])[], labels: readonly number[], options: FitOptions = {}): LogisticModel {
  const n = rows.length;
  if (n === 0 || n !== labels.length) throw new Error(`fitLogistic: ${n} rows and ${labels.length} labels; need the same number, at least one`);
  const d = (rows[0] as readonly number[]).length;
  const mean = Array.from({ length: d }, (_, j) => rows.reduce((s, r) => s + (r[j] as number), 0) / n);
  const std = mean.map((m, j) => Math.sqrt(rows.reduce((s, r) => s + ((r[j] as number) - m) ** 2, 0) / n) || 1);
  const xs = rows.map((r) => [1, ...r.map((v, j) => (v - (mean[j] as number)) / (std[j] as number))]);
  const l2 = options.l2 ?? 1;
  const w = new Array<number>(d + 1).fill(0);
  for (let iter = 0; iter < (options.iterations ?? 25); iter++) {
    const grad = new Array<number>(d + 1).fill(0);
    const hess = Array.from({ length: d + 1 }, () => new Array<number>(d + 1).fill(0));
    for (let i = 0; i < n; i++) {
      const x = xs[i] as number[];
      const rw = options.rowWeights?.[i] ?? 1;
      let z = 0;
      for (let j = 0; j <= d; j++) z += (w[j] as number) * (x[j] as number);
      const p = 1 / (1 + Math.exp(-z));
      const g = rw * (p - (labels[i] as number));
      const h = rw * Math.max(p * (1 - p), 1e-9);
      for (let a = 0; a <= d; a++) {
        grad[a] = (grad[a] as number) + g * (x[a] as number);
        const row = hess[a] as number[];
        for (let b = a; b <= d; b++) row[b] = (row[b] as number) + h * (x[a] as number) * (x[b] as number);
      }
    }
    for (let a = 1; a <= d; a++) {
      grad[a] = (grad[a] as number) + l2 * (w[a] as number);
      (hess[a] as number[])[a] = ((hess[a] as number[])[a] as number) + l2;
    }
    for (let a = 0; a <= d; a++) for (let b = 0; b < a; b++) (hess[a] as number[])[b] = (hess[b] as number[])[a] as number;
    const step = solve(hess, grad);
    let change = 0;
    for (let j = 0; j <= d; j++) {
      w[j] = (w[j] as number) - (step[j] as number);
      change = Math.max(change, Math.abs(step[j] as number));
    }
    if (change < 1e-7) break;
  }
  return { mean, std, weights: w.slice(1), bias: w[0] as number };
}

/** Solves A x = b by Gaussian elimination with partial pivoting (A is small and positive definite). */
function solve(a: number[][], b: number[]): number[] {
  const n = b.length;
  const m = a.map((row, i) => [...row, b[i] as number]);
  for (let col = 0; col < n; col++) {
    let pivot = col;
    for (let r = col + 1; r < n; r++) if (Math.abs((m[r] as number[])[col] as number) > Math.abs((m[pivot] as number[])[col] as number)) pivot = r;
    [m[col], m[pivot]] = [m[pivot] as number[], m[col] as number[]];
    const p = (m[col] as number[])[col] as number;
    if (Math.abs(p) < 1e-12) continue;
    for (let r = col + 1; r < n; r++) {
      const f = ((m[r] as number[])[col] as number) / p;
      if (f === 0) continue;
      for (let c = col; c <= n; c++) (m[r] as number[])[c] = ((m[r] as number[])[c] as number) - f * ((m[col] as number[])[c] as number);
    }
  }
  const x = new Array<number>(n).fill(0);
  for (let r = n - 1; r >= 0; r--) {
    const row = m[r] as number[];
    let s = row[n] as number;
    for (let c = r + 1; c < n; c++) s -= (row[c] as number) * (x[c] as number);
    const p = row[r] as number;
    x[r] = Math.abs(p) < 1e-12 ? 0 : s / p;
  }
  return x;
}
