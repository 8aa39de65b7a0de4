/**
 * Exact calls: an intent that is a tool id followed by its arguments, written as JSON
 * (`read_file {"path": "README.md"}`) or as a call (`read_file(path="README.md", max_bytes=200)`),
 * is checked against the tool's schema and runs as written: nothing is retrieved, guessed or
 * filled in. A malformed one is refused with what to fix, never read as plain words, because the
 * agent said exactly what it meant and a different call would be a guess.
 */
import { validateArgs } from '../executor/validate-args.js';
import { exampleCall } from './example-call.js';
import { describeError } from '../base/errors.js';
import { jsonTooDeepAt } from '../base/json-depth.js';
import type { Tool } from '../registry/types.js';
import { setOwn } from '../base/plain-object.js';

export type ExactCall =
  /** Not written in the exact form. */
  | { kind: 'none' }
  | { kind: 'call'; tool: Tool; args: Record<string, unknown> }
  /** The exact form, but the tool is unknown or the arguments do not fit its schema. */
  | { kind: 'invalid'; id: string; tool?: Tool; reason: string; missing: string[] };

const JSON_FORM = /^`?([A-Za-z0-9_.-]{1,128})`?\s*(\{[\s\S]*\})$/;
const CALL_FORM = /^`?([A-Za-z0-9_.-]{1,128})`?\s*\(([\s\S]*)\)$/;
/** An id the agent wrote as an id: a plain word followed by `{…}` may still be prose. */
const ID_LIKE = /[_.]|[a-z][A-Z]/;

export function readExactCall(intent: string, tools: ReadonlyMap<string, Tool>): ExactCall {
  const text = intent.trim();
  const json = JSON_FORM.exec(text);
  const call = json ? undefined : CALL_FORM.exec(text);
  const match = json ?? call;
  if (!match) return { kind: 'none' };
  const id = match[1] as string;
  const tool = tools.get(id);
  if (!tool && !ID_LIKE.test(id) && !text.startsWith('`')) return { kind: 'none' };
  if (!tool) return { kind: 'invalid', id, reason: `there is no tool \`${id}\`; call one of the closest tools below the same way, by its own name`, missing: [] };

  const parsed = json ? parseJsonArgs(match[2] as string) : parseCallArgs(match[2] as string);
  // The example names the tool's own parameters, with placeholders: the broken arguments are not read back into it.
  if (!parsed.ok) return { kind: 'invalid', id, tool, reason: `the arguments of \`${id}\` ${parsed.reason}; write them as JSON, e.g. [TOOL: ${exampleCall(tool)}]`, missing: [] };
  const missing = tool.parameters.filter((p) => p.required && p.default === undefined && (parsed.args[p.name] === undefined || parsed.args[p.name] === null)).map((p) => p.name);
  if (missing.length > 0) {
    return { kind: 'invalid', id, tool, reason: `the exact call of \`${id}\` lacks the required ${missing.map((m) => `\`${m}\``).join(', ')}`, missing };
  }
  try {
    validateArgs(tool, parsed.args);
  } catch (error) {
    return { kind: 'invalid', id, tool, reason: `the exact call does not fit: ${describeError(error).replace(/^INVALID_INPUT: /, '')}`, missing: [] };
  }
  // As written: defaults are the tool proxy's to fill, so the call shown is the call the agent made.
  return { kind: 'call', tool, args: parsed.args };
}

type Parsed = { ok: true; args: Record<string, unknown> } | { ok: false; reason: string };

function parseJsonArgs(text: string): Parsed {
  if (jsonTooDeepAt(text) !== -1) return { ok: false, reason: 'nest too deeply' };
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (error) {
    return { ok: false, reason: `are not valid JSON (${(error as Error).message})` };
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) return { ok: false, reason: 'must be a JSON object' };
  return { ok: true, args: value as Record<string, unknown> };
}

/**
 * `name=value, name2: value2`: each value is JSON (a string in double quotes, a number, true,
 * false, null, a list or an object), a string in single quotes, or a bare word read as a string.
 */
function parseCallArgs(text: string): Parsed {
  const args: Record<string, unknown> = {};
  for (const part of splitTopLevel(text)) {
    if (part.trim() === '') continue;
    const m = /^\s*([A-Za-z_][A-Za-z0-9_.-]*)\s*[=:]\s*([\s\S]*?)\s*$/.exec(part);
    if (!m) return { ok: false, reason: `have ${JSON.stringify(part.trim().slice(0, 60))}, which is not \`name=value\`; name every argument` };
    const name = m[1] as string;
    if (Object.hasOwn(args, name)) return { ok: false, reason: `give \`${name}\` twice` };
    const value = literal(m[2] as string);
    if (value === undefined) return { ok: false, reason: `have no value for \`${name}\`` };
    setOwn(args, name, value);
  }
  return { ok: true, args };
}

function literal(raw: string): unknown {
  if (raw === '') return undefined;
  if (raw.length >= 2 && raw.startsWith("'") && raw.endsWith("'")) return raw.slice(1, -1);
  if (jsonTooDeepAt(raw) === -1) {
    try {
      return JSON.parse(raw) as unknown;
    } catch {
      // not JSON: a bare word below
    }
  }
  return raw;
}

/** Splits at commas outside quotes and brackets. */
function splitTopLevel(text: string): string[] {
  const parts: string[] = [];
  let depth = 0;
  let quote: string | undefined;
  let start = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    if (quote !== undefined) {
      if (c === '\\') i++;
      else if (c === quote) quote = undefined;
    } else if (c === '"' || c === "'") quote = c;
    else if (c === '[' || c === '{' || c === '(') depth++;
    else if (c === ']' || c === '}' || c === ')') depth--;
    else if (c === ',' && depth === 0) {
      parts.push(text.slice(start, i));
      start = i + 1;
    }
  }
  parts.push(text.slice(start));
  return parts;
}
