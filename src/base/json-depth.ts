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

/**
 * JSON.parse for text from outside (a model's answer, an upstream's body): text nested deeper
 * than `max` throws a SyntaxError, as text that is not JSON does, so the caller's "not JSON"
 * path refuses it before anything recursive reads the value.
 */
export function parseJsonWithin(text: string, max: number = MAX_JSON_DEPTH): unknown {
  const deepAt = jsonTooDeepAt(text, max);
  if (deepAt !== -1) throw new SyntaxError(`nested more than ${max} levels of arrays and objects (at character ${deepAt})`);
  return JSON.parse(text) as unknown;
}

/**
 * Whether a value already parsed elsewhere (the MCP SDK's messages, a caller's arguments) nests
 * arrays and objects deeper than `max`. Walked with a stack of its own, never recursion; a cycle
 * reads as too deep, so the walk ends.
 */
export function valueTooDeep(value: unknown, max: number = MAX_JSON_DEPTH): boolean {
  const stack: Array<[unknown, number]> = [[value, 0]];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    const [v, depth] = next;
    if (typeof v !== 'object' || v === null) continue;
    if (depth + 1 > max) return true;
    for (const child of Array.isArray(v) ? v : Object.values(v)) {
      if (typeof child === 'object' && child !== null) stack.push([child, depth + 1]);
    }
  }
  return false;
}
