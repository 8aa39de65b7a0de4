import { describe, expect, it } from 'vitest';
import { jsonTooDeepAt, parseJsonWithin, valueTooDeep } from '../../src/base/json-depth.js';

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

describe('parseJsonWithin', () => {
  it('parses text within the cap and refuses deeper text as not JSON, at any depth', () => {
    expect(parseJsonWithin('{"a":[1,{"b":2}]}', 3)).toEqual({ a: [1, { b: 2 }] });
    expect(() => parseJsonWithin('{"a":[1,{"b":[]}]}', 3)).toThrow(SyntaxError);
    expect(() => parseJsonWithin('['.repeat(200_000) + ']'.repeat(200_000))).toThrow(/nested more than 128 levels/);
  });
});

describe('valueTooDeep', () => {
  it('measures nesting, not size, without recursion', () => {
    expect(valueTooDeep({ a: [1, { b: 2 }] }, 3)).toBe(false);
    expect(valueTooDeep({ a: [1, { b: [] }] }, 3)).toBe(true);
    expect(valueTooDeep([[1], [2], [3], [4]], 2)).toBe(false);
    expect(valueTooDeep('a string', 0)).toBe(false);
    expect(valueTooDeep(JSON.parse('['.repeat(200_000) + ']'.repeat(200_000)))).toBe(true);
  });

  it('ends on a cycle', () => {
    const loop: Record<string, unknown> = {};
    loop.self = loop;
    expect(valueTooDeep(loop)).toBe(true);
  });
});
