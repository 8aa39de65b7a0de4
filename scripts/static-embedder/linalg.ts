/**
 * The little dense linear algebra the static-embedder build needs, on row-major typed arrays:
 * cross products, a symmetric eigensolver, a Cholesky solve. Float32 storage, float64 sums.
 * Sizes here are at most a few hundred columns, so plain cache-friendly loops are fast enough
 * (the largest product, 60k rows × 512², takes seconds).
 */

/** Column means of an n × d matrix. */
export function columnMeans(rows: Float32Array, n: number, d: number): Float64Array {
  const mean = new Float64Array(d);
  for (let r = 0; r < n; r++) {
    const at = r * d;
    for (let j = 0; j < d; j++) mean[j]! += rows[at + j]!;
  }
  for (let j = 0; j < d; j++) mean[j]! /= Math.max(1, n);
  return mean;
}

/**
 * Σ_r (a_r − meanA)ᵀ (b_r − meanB) over the rows listed in `pick` (all rows when absent):
 * a da × db float64 matrix. With a === b only the upper triangle is summed, then mirrored.
 */
export function crossProduct(
  a: Float32Array,
  da: number,
  b: Float32Array,
  db: number,
  options: { rows: number; pick?: ArrayLike<number>; meanA?: Float64Array; meanB?: Float64Array },
): Float64Array {
  const out = new Float64Array(da * db);
  const same = a === b && da === db && options.meanA === options.meanB;
  const ra = new Float64Array(da);
  const rb = new Float64Array(db);
  const count = options.pick?.length ?? options.rows;
  for (let step = 0; step < count; step++) {
    const r = options.pick === undefined ? step : options.pick[step]!;
    for (let i = 0; i < da; i++) ra[i] = a[r * da + i]! - (options.meanA?.[i] ?? 0);
    for (let j = 0; j < db; j++) rb[j] = b[r * db + j]! - (options.meanB?.[j] ?? 0);
    for (let i = 0; i < da; i++) {
      const x = ra[i]!;
      if (x === 0) continue;
      const at = i * db;
      for (let j = same ? i : 0; j < db; j++) out[at + j]! += x * rb[j]!;
    }
  }
  if (same) for (let i = 0; i < da; i++) for (let j = 0; j < i; j++) out[i * da + j] = out[j * da + i]!;
  return out;
}

/**
 * Eigenvalues (largest first) and unit eigenvectors (row k belongs to value k) of a symmetric
 * n × n matrix, by cyclic Jacobi rotations: simple, and accurate to rounding for the few-hundred
 * sized covariance matrices here.
 */
export function symmetricEigen(matrix: Float64Array, n: number, maxSweeps = 60): { values: Float64Array; vectors: Float64Array } {
  const a = Float64Array.from(matrix);
  const v = new Float64Array(n * n);
  for (let i = 0; i < n; i++) v[i * n + i] = 1;
  let scale = 0;
  for (let i = 0; i < n * n; i++) scale += a[i]! * a[i]!;
  for (let sweep = 0; sweep < maxSweeps; sweep++) {
    let off = 0;
    for (let p = 0; p < n; p++) for (let q = p + 1; q < n; q++) off += a[p * n + q]! * a[p * n + q]!;
    if (off <= 1e-24 * scale || off === 0) break;
    for (let p = 0; p < n - 1; p++) {
      for (let q = p + 1; q < n; q++) {
        const apq = a[p * n + q]!;
        if (apq === 0) continue;
        const theta = (a[q * n + q]! - a[p * n + p]!) / (2 * apq);
        const t = Math.sign(theta || 1) / (Math.abs(theta) + Math.sqrt(theta * theta + 1));
        const c = 1 / Math.sqrt(t * t + 1);
        const s = t * c;
        // A ← Jᵀ A J with J the rotation in the (p, q) plane; columns first, then rows.
        for (let k = 0; k < n; k++) {
          const kp = a[k * n + p]!;
          const kq = a[k * n + q]!;
          a[k * n + p] = c * kp - s * kq;
          a[k * n + q] = s * kp + c * kq;
        }
        const rp = p * n;
        const rq = q * n;
        for (let k = 0; k < n; k++) {
          const pk = a[rp + k]!;
          const qk = a[rq + k]!;
          a[rp + k] = c * pk - s * qk;
          a[rq + k] = s * pk + c * qk;
        }
        for (let k = 0; k < n; k++) {
          const kp = v[k * n + p]!;
          const kq = v[k * n + q]!;
          v[k * n + p] = c * kp - s * kq;
          v[k * n + q] = s * kp + c * kq;
        }
      }
    }
  }
  const order = Array.from({ length: n }, (_, i) => i).sort((x, y) => a[y * n + y]! - a[x * n + x]! || x - y);
  const values = new Float64Array(n);
  const vectors = new Float64Array(n * n);
  order.forEach((col, k) => {
    values[k] = a[col * n + col]!;
    // A deterministic sign: the largest component of each eigenvector is positive.
    let big = 0;
    for (let i = 0; i < n; i++) if (Math.abs(v[i * n + col]!) > Math.abs(big)) big = v[i * n + col]!;
    const sign = big < 0 ? -1 : 1;
    for (let i = 0; i < n; i++) vectors[k * n + i] = sign * v[i * n + col]!;
  });
  return { values, vectors };
}

/**
 * rows (n × d, minus `mean` when given) times the transpose of `basis` (k × d, one direction a
 * row): the n × k coordinates in that basis.
 */
export function projectRows(rows: Float32Array, n: number, d: number, basis: Float64Array, k: number, mean?: Float64Array): Float32Array {
  const out = new Float32Array(n * k);
  const r = new Float64Array(d);
  for (let row = 0; row < n; row++) {
    for (let j = 0; j < d; j++) r[j] = rows[row * d + j]! - (mean?.[j] ?? 0);
    for (let c = 0; c < k; c++) {
      let sum = 0;
      const at = c * d;
      for (let j = 0; j < d; j++) sum += r[j]! * basis[at + j]!;
      out[row * k + c] = sum;
    }
  }
  return out;
}

/** rows (n × d) times m (d × k): n × k. */
export function multiply(rows: Float32Array, n: number, d: number, m: Float64Array, k: number): Float32Array {
  const out = new Float32Array(n * k);
  const acc = new Float64Array(k);
  for (let row = 0; row < n; row++) {
    acc.fill(0);
    for (let j = 0; j < d; j++) {
      const x = rows[row * d + j]!;
      if (x === 0) continue;
      const at = j * k;
      for (let c = 0; c < k; c++) acc[c]! += x * m[at + c]!;
    }
    out.set(acc, row * k);
  }
  return out;
}

/** Solves A X = B for symmetric positive definite A (n × n) and B (n × m), by Cholesky. */
export function choleskySolve(a: Float64Array, n: number, b: Float64Array, m: number): Float64Array {
  const l = new Float64Array(n * n);
  for (let i = 0; i < n; i++) {
    for (let j = 0; j <= i; j++) {
      let sum = a[i * n + j]!;
      for (let k = 0; k < j; k++) sum -= l[i * n + k]! * l[j * n + k]!;
      if (i === j) {
        if (!(sum > 0)) throw new RangeError(`the matrix is not positive definite (pivot ${i} is ${sum}); raise the ridge penalty`);
        l[i * n + i] = Math.sqrt(sum);
      } else {
        l[i * n + j] = sum / l[j * n + j]!;
      }
    }
  }
  const x = Float64Array.from(b);
  // Forward (L y = b), then back (Lᵀ x = y), all m right-hand sides at once.
  for (let i = 0; i < n; i++) {
    for (let k = 0; k < i; k++) {
      const f = l[i * n + k]!;
      for (let c = 0; c < m; c++) x[i * m + c]! -= f * x[k * m + c]!;
    }
    for (let c = 0; c < m; c++) x[i * m + c]! /= l[i * n + i]!;
  }
  for (let i = n - 1; i >= 0; i--) {
    for (let k = i + 1; k < n; k++) {
      const f = l[k * n + i]!;
      for (let c = 0; c < m; c++) x[i * m + c]! -= f * x[k * m + c]!;
    }
    for (let c = 0; c < m; c++) x[i * m + c]! /= l[i * n + i]!;
  }
  return x;
}
