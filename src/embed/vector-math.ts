/** Small vector helpers shared by the embedders and their callers; plain loops, no allocation beyond the result. */

/** The dot product; with unit vectors this is the cosine similarity. Throws on a length mismatch. */
export function dot(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw new RangeError(`cannot take the dot product of vectors of length ${a.length} and ${b.length}`);
  let sum = 0;
  for (let i = 0; i < a.length; i++) sum += (a[i] as number) * (b[i] as number);
  return sum;
}

/**
 * A unit-length copy of `values` as float32, or null when that is impossible (empty, all zeros,
 * or a NaN/Infinity somewhere): callers decide whether that is a broken model or bad upstream data.
 */
export function normalize(values: ArrayLike<number>): Float32Array | null {
  let sum = 0;
  for (let i = 0; i < values.length; i++) {
    const v = values[i] as number;
    sum += v * v;
  }
  const norm = Math.sqrt(sum);
  if (!Number.isFinite(norm) || norm === 0) return null;
  const out = new Float32Array(values.length);
  for (let i = 0; i < values.length; i++) out[i] = (values[i] as number) / norm;
  return out;
}
