/**
 * Kiwi's directives write hook conditions with `and`, `or` and `not`; CEL spells them `&&`, `||`
 * and `!`. This is a lexer, not a parser: it walks the text token by token, copies string and
 * bytes literals (quoted, triple-quoted, raw), back-quoted field names, comments and numbers
 * untouched, and replaces only whole identifiers `and`/`or`/`not` that are not a field name
 * (after `.` or `.?`). `android`, `order` and `notes` are single identifiers and stay as written.
 * The CEL parser sees the result and reports anything malformed; the edits let its positions be
 * mapped back to what the author wrote.
 */

const OPERATORS: Record<string, string> = { and: '&&', or: '||', not: '!' };

/** One replaced word: where it is in the source, where its operator is in the CEL text. */
export interface OperatorEdit {
  word: 'and' | 'or' | 'not';
  sourceOffset: number;
  celOffset: number;
}

export interface OperatorTranslation {
  cel: string;
  edits: OperatorEdit[];
}

export function translateKiwiOperators(source: string): OperatorTranslation {
  const edits: OperatorEdit[] = [];
  let cel = '';
  let copiedTo = 0;
  let i = 0;
  while (i < source.length) {
    const c = source[i] as string;
    if (c === '/' && source[i + 1] === '/') {
      i = lineEnd(source, i);
    } else if (c === '`') {
      i = backQuotedEnd(source, i);
    } else if (c === '"' || c === "'") {
      i = stringEnd(source, i, false);
    } else if (isDigit(c)) {
      i = numberEnd(source, i);
    } else if (isIdentStart(c)) {
      const start = i;
      i = identEnd(source, i);
      const word = source.slice(start, i);
      if (isStringPrefix(word) && (source[i] === '"' || source[i] === "'")) {
        i = stringEnd(source, i, /[rR]/.test(word));
      } else if (word in OPERATORS && !isFieldName(source, start)) {
        cel += source.slice(copiedTo, start);
        edits.push({ word: word as OperatorEdit['word'], sourceOffset: start, celOffset: cel.length });
        cel += OPERATORS[word];
        copiedTo = i;
      }
    } else {
      i += 1;
    }
  }
  return { cel: cel + source.slice(copiedTo), edits };
}

/** The offset in the source that an offset in the CEL text came from (an operator maps to its word). */
export function sourceOffset(translation: OperatorTranslation, celOffset: number): number {
  let shift = 0;
  for (const edit of translation.edits) {
    if (celOffset < edit.celOffset) break;
    const celLength = (OPERATORS[edit.word] as string).length;
    if (celOffset < edit.celOffset + celLength) return edit.sourceOffset;
    shift += edit.word.length - celLength;
  }
  return celOffset + shift;
}

/** CEL string prefixes: r (raw), b (bytes), either case, in either order. */
function isStringPrefix(word: string): boolean {
  return /^(?:[rRbB]|[rR][bB]|[bB][rR])$/.test(word);
}

/** `x.and` and `x.?or` select a field of that name; they are not operators. */
function isFieldName(source: string, start: number): boolean {
  let j = start - 1;
  while (j >= 0 && isSpace(source[j] as string)) j -= 1;
  if (source[j] === '?') j -= 1;
  return source[j] === '.';
}

/** The offset after the literal whose quote is at `open`; an unterminated one runs to where CEL would stop reading it. */
function stringEnd(source: string, open: number, raw: boolean): number {
  const quote = source[open] as string;
  const triple = source[open + 1] === quote && source[open + 2] === quote;
  let i = open + (triple ? 3 : 1);
  while (i < source.length) {
    const c = source[i] as string;
    if (c === '\\' && !raw) {
      i += 2;
    } else if (c === quote && (!triple || (source[i + 1] === quote && source[i + 2] === quote))) {
      return i + (triple ? 3 : 1);
    } else if (!triple && (c === '\n' || c === '\r')) {
      return i;
    } else {
      i += 1;
    }
  }
  return source.length;
}

function backQuotedEnd(source: string, open: number): number {
  const close = source.indexOf('`', open + 1);
  const newline = lineEnd(source, open);
  return close === -1 || close > newline ? newline : close + 1;
}

function lineEnd(source: string, from: number): number {
  const newline = source.indexOf('\n', from);
  return newline === -1 ? source.length : newline;
}

/** Digits, then the letters, digits and dots of hex, exponents and `u` suffixes: `0xFFu`, `1.5e3`. */
function numberEnd(source: string, start: number): number {
  let i = start + 1;
  while (i < source.length && /[0-9A-Za-z_.]/.test(source[i] as string)) i += 1;
  return i;
}

function identEnd(source: string, start: number): number {
  let i = start + 1;
  while (i < source.length && (isIdentStart(source[i] as string) || isDigit(source[i] as string))) i += 1;
  return i;
}

function isIdentStart(c: string): boolean {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c === '_';
}

function isDigit(c: string): boolean {
  return c >= '0' && c <= '9';
}

function isSpace(c: string): boolean {
  return c === ' ' || c === '\t' || c === '\n' || c === '\r' || c === '\f' || c === '\v';
}
