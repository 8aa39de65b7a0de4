import { canonicalJson } from '../base/canonical-json.js';
import type { Tool } from '../registry/types.js';
import { quoted } from '../resolver/quoted-values.js';
import type { ToolCallSpec } from '../resolver/types.js';

/** The quote that closes each opening quote the resolver reads (see quoted-values.ts). */
const CLOSERS: Readonly<Record<string, string>> = { '"': '"', '“': '”', '«': '»', '‘': '’', "'": "'" };

/**
 * Whether every argument of `call` was written out in full in `text`, text that is still being
 * streamed: a snapshot can end inside a value ("…the npm package \"ev" of "eventsource"), and the
 * resolver reads an unclosed quote to the end of the text. So a value counts only when it is the
 * inside of a quote that closed in `text` (or one item of a quoted list); a number may be quoted
 * too ("87"). A value the agent did not write, the parameter's schema default, needs nothing.
 * Anything else (an unquoted word, a flag, a value cut by the snapshot) is not closed: a
 * speculative run waits for the intent to close, when its arguments come from the whole intent.
 *
 * A quoted name is not a value either: while an exact call streams (`[TOOL: read_file {"path":`),
 * its JSON keys are the only closed quotes, and the resolver fills them in as values (issue 22
 * ran read_file on "path" and sent npm_package_info {"package":"package"} out). See `isKey`.
 */
export function closedValues(text: string, call: ToolCallSpec, tool: Tool | undefined): boolean {
  const closed = quoted(text).filter((m) => m.end - m.start >= 2 && text[m.end - 1] === CLOSERS[text[m.start] ?? ''] && !isKey(text, m.start, m.end));
  const written = (value: unknown): boolean => {
    if (typeof value === 'string') return closed.some((m) => m.text === value || m.text.split(/\s*[,;]\s*/).includes(value));
    if (typeof value === 'number') return closed.some((m) => m.num === value || m.text === String(value));
    if (Array.isArray(value)) return value.length > 0 && value.every(written);
    return false;
  };
  return Object.entries(call.arguments).every(([name, value]) => {
    const fallback = tool?.parameters.find((p) => p.name === name)?.default;
    return (fallback !== undefined && canonicalJson(fallback) === canonicalJson(value)) || written(value);
  });
}

/**
 * Whether the quote at `start`–`end` is written as a JSON key: a colon follows it, or it ends
 * the text so far right after a `{` or `,` (its colon may be in the next chunk). Prose that
 * quotes a name before a colon loses its speculative run, which only costs it the head start.
 */
function isKey(text: string, start: number, end: number): boolean {
  const after = text.slice(end);
  if (/^\s*:/.test(after)) return true;
  return after.trim() === '' && /[{,]\s*$/.test(text.slice(0, start));
}
