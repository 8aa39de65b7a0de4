import { describe, expect, it } from 'vitest';
import { jsonTooDeepAt } from '../src/json-depth.js';

describe('jsonTooDeepAt', () => {
  it('finds the first bracket past the cap, for arrays and objects alike', () => {
    expect(jsonTooDeepAt('[[[1]]]', 3)).toBe(-1);
    expect(jsonTooDeepAt('[[[[1]]]]', 3)).toBe(3);
    expect(jsonTooDeepAt('{"a":{"b":{"c":{}}}}', 3)).toBe(15);
    // Depth is nesting, not the count of brackets: siblings do not add up.
    expect(jsonTooDeepAt('[[1],[2],[3],[4]]', 2)).toBe(-1);
  });

  it('ignores brackets inside strings, escaped quotes included', () => {
    expect(jsonTooDeepAt('["[[[[", "\\"[[[[", "\\\\", [1]]', 2)).toBe(-1);
    expect(jsonTooDeepAt('["\\\\", [[1]]]', 2)).toBe(8);
  });

  it('walks a million levels without recursion', () => {
    expect(jsonTooDeepAt('['.repeat(1_000_000) + ']'.repeat(1_000_000), 128)).toBe(128);
  });
});
