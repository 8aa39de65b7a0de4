import { describe, expect, it } from 'vitest';
import { textHead, textTail } from '../../src/base/text-cut.js';

describe('cutting text at either end', () => {
  it('keeps short text whole, and never keeps half of a surrogate pair', () => {
    expect(textHead('abc', 5)).toBe('abc');
    expect(textTail('abc', 5)).toBe('abc');
    expect(textHead('abcdef', 3)).toBe('abc');
    expect(textTail('abcdef', 3)).toBe('def');
    // '😀' is two UTF-16 units: a cut through it drops the whole character.
    expect(textHead('ab😀cd', 3)).toBe('ab');
    expect(textTail('ab😀cd', 3)).toBe('cd');
    expect(textHead('ab😀cd', 4)).toBe('ab😀');
    expect(textTail('ab😀cd', 4)).toBe('😀cd');
    expect(textHead('abc', 0)).toBe('');
  });
});
