import { describe, expect, it } from 'vitest';
import { sourceOffset, translateKiwiOperators } from '../../src/hooks/kiwi-operators.js';

const cel = (source: string) => translateKiwiOperators(source).cel;

describe('translateKiwiOperators', () => {
  it('translates and, or and not between operands', () => {
    expect(cel('event.name == "error" and event.code == "timeout"')).toBe('event.name == "error" && event.code == "timeout"');
    expect(cel('a or b')).toBe('a || b');
    expect(cel('not (a or b)')).toBe('! (a || b)');
    expect(cel('(a)and(b)or not(c)')).toBe('(a)&&(b)|| !(c)');
  });

  it('leaves CEL operators and conditions without the words as they are', () => {
    const source = 'cost.turns > limits.turns * 0.9 && !tool.mutates_state || x';
    expect(cel(source)).toBe(source);
    expect(translateKiwiOperators(source).edits).toEqual([]);
  });

  it('never touches the words inside string and bytes literals of any kind', () => {
    for (const literal of [
      `'this and that'`,
      `"this or that"`,
      `"""not this and "quoted" or that"""`,
      `'''one ' and two'''`,
      `r'raw and \\'`,
      `R"raw \\ not"`,
      `b'bytes and'`,
      `rb"raw bytes or"`,
      `Br'raw bytes not'`,
      `"escaped \\" and still inside"`,
    ]) {
      expect(cel(`event.detail == ${literal} and x`)).toBe(`event.detail == ${literal} && x`);
    }
  });

  it('ends a raw string at its quote, since a backslash escapes nothing there', () => {
    expect(cel(`r'C:\\' and x`)).toBe(`r'C:\\' && x`);
  });

  it('leaves identifiers that contain the words, and field names that are the words', () => {
    expect(cel('tool.android and event.order or notes.nota')).toBe('tool.android && event.order || notes.nota');
    expect(cel('_and or and_ or NOT or And')).toBe('_and || and_ || NOT || And');
    expect(cel('event.and or event. or or event.?not')).toBe('event.and || event. or || event.?not');
  });

  it('leaves comments, back-quoted field names and numbers alone', () => {
    expect(cel('a and b // not this or that\nor c')).toBe('a && b // not this or that\n|| c');
    expect(cel('x.`a and b` or 0x1Fu > 1.5e3')).toBe('x.`a and b` || 0x1Fu > 1.5e3');
  });

  it('stops an unterminated single-line string at the end of its line, for the parser to report', () => {
    expect(cel('"open and\nor x')).toBe('"open and\n|| x');
  });

  it('maps offsets in the CEL text back to the source', () => {
    const t = translateKiwiOperators('a and not b or c');
    expect(t.cel).toBe('a && ! b || c');
    expect(sourceOffset(t, 0)).toBe(0);
    expect(sourceOffset(t, 2)).toBe(2); // `&&` → `and`
    expect(sourceOffset(t, 3)).toBe(2);
    expect(sourceOffset(t, 5)).toBe(6); // `!` → `not`
    expect(sourceOffset(t, 7)).toBe(10); // b
    expect(sourceOffset(t, 12)).toBe(15); // c
  });
});
