import { describe, expect, it } from 'vitest';
import { createVectorMatrix } from '../../src/store/vector-matrix.js';

function unit(values: number[]): Float32Array {
  const norm = Math.hypot(...values);
  return Float32Array.from(values.map((v) => v / norm));
}

describe('vector matrix', () => {
  const rows = Array.from({ length: 200 }, (_, i) => ({ id: `t${i}`, vector: unit([Math.sin(i), Math.cos(i * 0.7), (i % 7) - 3, 1]) }));
  const matrix = createVectorMatrix(rows, 4);

  it('returns the k best rows by dot product, best first, as a full sort would', () => {
    const query = unit([0.3, -1, 2, 0.5]);
    const expected = rows
      .map((r) => ({ id: r.id, score: r.vector.reduce((s, v, d) => s + v * (query[d] as number), 0) }))
      .sort((a, b) => b.score - a.score)
      .slice(0, 7);
    const got = matrix.search(query, 7);
    expect(got.map((h) => h.id)).toEqual(expected.map((h) => h.id));
    got.forEach((h, i) => expect(h.score).toBeCloseTo(expected[i]!.score, 5));
  });

  it('handles k larger than the table and k = 0', () => {
    expect(matrix.search(unit([1, 0, 0, 0]), 500)).toHaveLength(200);
    expect(matrix.search(unit([1, 0, 0, 0]), 0)).toEqual([]);
    expect(createVectorMatrix([], 4).search(unit([1, 0, 0, 0]), 3)).toEqual([]);
  });
});
