/**
 * A cap on how deeply JSON from outside nests. V8's JSON.parse takes any depth, but what reads
 * the value next — JSON.stringify, zod, a recursive walk — runs out of stack somewhere past a
 * few thousand levels and fails as an internal error. Checked on the text with a loop (never
 * recursion, which would fail the same way), before the value exists.
 */

/** Deeper than any real request, shallow enough for every recursive reader of the value. */
export const MAX_JSON_DEPTH = 128;

/** Where (a character offset) `text` first nests arrays and objects deeper than `max`, or -1. */
export function jsonTooDeepAt(text: string, max: number = MAX_JSON_DEPTH): number {
  let depth = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (c === 0x22 /* " */) {
      i = stringEnd(text, i);
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      depth += 1;
      if (depth > max) return i;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth -= 1;
    }
  }
  return -1;
}

/** The offset of the quote that closes the string opening at `open` (text.length when none does). */
function stringEnd(text: string, open: number): number {
  for (let quote = text.indexOf('"', open + 1); quote !== -1; quote = text.indexOf('"', quote + 1)) {
    let backslashes = 0;
    while (text.charCodeAt(quote - 1 - backslashes) === 0x5c) backslashes += 1;
    if (backslashes % 2 === 0) return quote;
  }
  return text.length;
}
