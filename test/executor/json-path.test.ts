import { describe, expect, it } from 'vitest';
import { parseJsonPath, queryJsonPath } from '../../src/executor/json-path.js';

const doc = { a: { b: [{ c: 1 }, { c: 2 }, { c: 3 }] }, items: [{ name: 'x' }, { name: 'y' }, { other: 1 }], 'odd key': 5 };
const q = (path: string) => queryJsonPath(doc, parseJsonPath(path));

describe('JSONPath subset', () => {
  it('reads names, indexes (negative too) and quoted names as one value', () => {
    expect(q('$.a.b[0].c')).toBe(1);
    expect(q('$.a.b[-1].c')).toBe(3);
    expect(q("$['odd key']")).toBe(5);
    expect(q('$')).toEqual(doc);
    expect(q('$.missing.deeper')).toBeUndefined();
  });

  it('gives every match of a wildcard or a slice as a list', () => {
    expect(q('$.items[*].name')).toEqual(['x', 'y']);
    expect(q('$.a.b[0:2]')).toEqual([{ c: 1 }, { c: 2 }]);
    expect(q('$.a.b[::2].c')).toEqual([1, 3]);
    expect(q('$.a.b[-2:].c')).toEqual([2, 3]);
    expect(q('$.a.*')).toEqual([doc.a.b]);
    expect(q('$.a.b[5:9]')).toEqual([]);
  });

  it('refuses filters, scripts, unions, recursive descent and paths not starting at $, naming the forms it reads', () => {
    for (const bad of ['$..c', '$.items[?(@.name)]', '$.items[(@.length-1)]', '$.a.b[0,1]', 'a.b', '$.a.b[0:1:0]', '$.a[']) {
      expect(() => parseJsonPath(bad), bad).toThrow(/the gateway reads JSONPath of the form \$\.a\.b\[0\]\.c/);
    }
  });
});
