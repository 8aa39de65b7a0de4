/**
 * A parameter's JSON Schema `pattern`, compiled with RE2 (re2js): patterns come from MCP servers
 * and tool files nobody here wrote, and RE2 matches in time linear in the value, so a pattern like
 * `^(a+)+$` cannot stall the gateway the way a backtracking engine would. The price is that RE2
 * refuses lookaround and backreferences; such a pattern is reported and not enforced.
 */
import { LRUCache } from 'lru-cache';
import { RE2JS } from 're2js';

/** Longer patterns are not compiled: RE2's program grows with the pattern, and real ones are short. */
export const MAX_PATTERN_CHARS = 1000;
/** Longer values are refused rather than matched: a value a pattern constrains is an id or a code, not a document. */
export const MAX_MATCHED_CHARS = 10_000;

/** Tests a value the way JSON Schema does: a search anywhere in it, unless the pattern anchors itself. */
export type PatternTest = (value: string) => boolean;

export type CompiledPattern = { ok: true; test: PatternTest } | { ok: false; reason: string };

/** Compiled once per pattern: argument checks run on every call and every resolution. */
const compiled = new LRUCache<string, CompiledPattern>({ max: 1024 });

export function compilePattern(source: string): CompiledPattern {
  let pattern = compiled.get(source);
  if (pattern === undefined) {
    pattern = compile(source);
    compiled.set(source, pattern);
  }
  return pattern;
}

function compile(source: string): CompiledPattern {
  if (source.length > MAX_PATTERN_CHARS) return { ok: false, reason: `it is longer than ${MAX_PATTERN_CHARS} characters` };
  let re: RE2JS;
  try {
    re = RE2JS.compile(fromEcmaScript(source));
  } catch (error) {
    return { ok: false, reason: unsupportedReason(error) };
  }
  // `test` is RE2's unanchored search, which is what JSON Schema's `pattern` means.
  return { ok: true, test: (value) => re.test(value) };
}

/**
 * JSON Schema patterns are ECMAScript regular expressions; RE2 reads most of that syntax as is but
 * writes a code point `\x{…}` where ECMAScript writes `\uXXXX` or `\u{…}`.
 */
function fromEcmaScript(source: string): string {
  let out = '';
  for (let i = 0; i < source.length; i++) {
    const ch = source[i] as string;
    if (ch !== '\\' || i + 1 >= source.length) {
      out += ch;
      continue;
    }
    const rest = source.slice(i + 2);
    const braced = source[i + 1] === 'u' ? /^\{([0-9A-Fa-f]{1,6})\}/.exec(rest) : null;
    const plain = source[i + 1] === 'u' ? /^[0-9A-Fa-f]{4}/.exec(rest) : null;
    if (braced !== null) {
      out += `\\x{${braced[1]}}`;
      i += 1 + braced[0].length;
    } else if (plain !== null) {
      out += `\\x{${plain[0]}}`;
      i += 1 + plain[0].length;
    } else {
      // Any other escape is copied whole, so that `\\u` stays a backslash and a `u`.
      out += source.slice(i, i + 2);
      i += 1;
    }
  }
  return out;
}

function unsupportedReason(error: unknown): string {
  const message = error instanceof Error ? error.message.replace(/^error parsing regexp:\s*/, '') : String(error);
  const hint = /\(\?[=!<]|\\[1-9]|\\k</.test(message)
    ? ' (lookaround and backreferences are not supported: the gateway matches patterns with RE2, which runs in linear time)'
    : '';
  return `RE2 cannot compile it: ${message}${hint}`;
}
