/**
 * `key=value`, `key: value` and `key="quoted value"` written in an intent, where `key` is one of
 * the tool's parameter names. These win over everything else: the agent said what it meant.
 */
import { DATE_PATTERN, dateFromMatch, formatDate } from './date-values.js';
import type { ParamProfile } from './param-profile.js';

export interface Hint {
  profile: ParamProfile;
  value: unknown;
  /** Span of `key=value` in the intent. */
  start: number;
  end: number;
  raw: string;
}

const KEY = /(?<![\w.-])([A-Za-z_][\w.-]*)[ \t]*(=|:)(?!\/\/)[ \t]*/g;
const CLOSE: ReadonlyMap<string, string> = new Map([['"', '"'], ["'", "'"], ['“', '”'], ['[', ']'], ['{', '}']]);

/** Hints for known parameters; `rejected` lists hints whose value does not fit the parameter's type. */
export function readHints(text: string, profiles: readonly ParamProfile[]): { hints: Hint[]; rejected: string[] } {
  const byName = new Map<string, ParamProfile>();
  const byLoose = new Map<string, ParamProfile>();
  for (const p of profiles) {
    byName.set(p.param.name, p);
    byLoose.set(loose(p.param.name), p);
  }
  const keys: Array<{ profile: ParamProfile; start: number; valueStart: number; sep: string }> = [];
  KEY.lastIndex = 0;
  for (let m = KEY.exec(text); m !== null; m = KEY.exec(text)) {
    const name = m[1] ?? '';
    const profile = byName.get(name) ?? byLoose.get(loose(name));
    if (profile) keys.push({ profile, start: m.index, valueStart: m.index + m[0].length, sep: m[2] ?? '=' });
  }
  const hints: Hint[] = [];
  const rejected: string[] = [];
  keys.forEach((k, i) => {
    const limit = keys[i + 1]?.start ?? text.length;
    const span = valueSpan(text, k.valueStart, limit, k.sep);
    if (span === undefined) return;
    const raw = span.raw;
    const value = coerceHint(raw, k.profile);
    if (value === undefined) {
      rejected.push(`${k.profile.param.name}: ${JSON.stringify(raw)} is not a ${k.profile.param.type}`);
      return;
    }
    if (hints.some((h) => h.profile === k.profile)) return;
    hints.push({ profile: k.profile, value, start: k.start, end: span.end, raw });
  });
  return { hints, rejected };
}

function loose(name: string): string {
  return name.toLowerCase().replace(/[^a-z0-9]/g, '');
}

function valueSpan(text: string, from: number, limit: number, sep: string): { raw: string; end: number } | undefined {
  const open = text[from] ?? '';
  const close = CLOSE.get(open);
  if (close !== undefined) {
    const end = text.indexOf(close, from + 1);
    if (end < 0 && (open === '[' || open === '{')) return undefined;
    const stop = end < 0 ? text.length : end;
    const inner = open === '[' || open === '{' ? text.slice(from, stop + 1) : text.slice(from + 1, stop);
    return { raw: inner, end: Math.min(text.length, stop + 1) };
  }
  // `key=value` is one token; `key: value` runs to the next comma, semicolon, line, closing
  // parenthesis ("(ICAO: AVL)"), sentence end or key.
  const rest = text.slice(from, limit);
  const m = sep === '=' ? /^[^\s,;]+/.exec(rest) : /^(?:[^,;\n)!?.]|\.(?!\s+[A-Z])|[!?](?!\s))+/.exec(rest);
  if (m === null) return undefined;
  const raw = m[0].trim().replace(/[.,;:!?)]+$/, '');
  return raw ? { raw, end: from + m[0].length } : undefined;
}

const TRUE_WORDS = new Set(['true', 'yes', 'y', 'on', '1', 'enable', 'enabled']);
const FALSE_WORDS = new Set(['false', 'no', 'n', 'off', '0', 'disable', 'disabled']);

function coerceHint(raw: string, p: ParamProfile): unknown {
  const param = p.param;
  if (param.enum !== undefined) {
    const hit = param.enum.find((v) => String(v).toLowerCase() === raw.toLowerCase());
    return hit;
  }
  switch (param.type) {
    case 'number':
    case 'integer': {
      const t = raw.replace(/[$€£,%]/g, '').trim();
      if (!/^-?\d+(\.\d+)?$/.test(t)) return undefined;
      const n = Number(t);
      return param.type === 'integer' && !Number.isInteger(n) ? undefined : n;
    }
    case 'boolean': {
      const t = raw.toLowerCase();
      return TRUE_WORDS.has(t) ? true : FALSE_WORDS.has(t) ? false : undefined;
    }
    case 'array': {
      const json = parseJson(raw);
      const items: unknown[] = Array.isArray(json) ? json : raw.split(/\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+/).filter((x) => x.length > 0);
      if (p.itemType !== 'number' && p.itemType !== 'integer') return items;
      const numbers = items.map((x) => (typeof x === 'string' && /^-?\d+(\.\d+)?$/.test(x.trim()) ? Number(x) : x));
      return numbers.every((x) => typeof x === 'number') ? numbers : undefined;
    }
    case 'object': {
      const json = parseJson(raw);
      return json !== null && typeof json === 'object' && !Array.isArray(json) ? json : undefined;
    }
    default: {
      if (p.dateFormat !== undefined) {
        DATE_PATTERN.lastIndex = 0;
        const d = DATE_PATTERN.exec(raw);
        const parts = d && d.index === 0 && d[0].length === raw.length ? dateFromMatch(d.groups ?? {}) : undefined;
        if (parts && parts.wholeMonth !== true) return formatDate(parts, p.dateFormat);
      }
      return raw;
    }
  }
}

function parseJson(raw: string): unknown {
  try {
    return JSON.parse(raw);
  } catch {
    return undefined;
  }
}
