/**
 * Turning a value found in the intent into what a parameter takes: the enum member it names,
 * a number of the right kind, a date in the format the description asks for, a one-item list.
 */
import { formatDate, lastDayOf, relativeDate } from './date-values.js';
import type { Mention } from './mention.js';
import { countryCode } from './country-codes.js';
import { currencyCode, isCurrencyCode } from './currency-codes.js';
import type { ParamProfile } from './param-profile.js';
import { convertUnit, unitParts } from './units.js';

export interface Converted {
  value: unknown;
  /** 0 none; 0.6 the value resembles a listed example; 0.9 it is one; 1.5 it is an allowed (enum) value. */
  example: number;
  /** The value matches a pattern that ordinary words do not. */
  patterned?: boolean;
}

const EXAMPLE_EXACT = 0.9;
const EXAMPLE_STEM = 0.6;
const ENUM_MATCH = 1.5;
/** A currency's name for a parameter that asks for a currency: as good as one of its listed examples. */
const CURRENCY_NAME = 0.9;
/** A description of a fraction: "0.2", ".5" (not the ".5" of "3.5"), "fraction", "between 0 and 1". */
const FRACTION = /(?<![\d.])0?\.\d+\b|\bfraction\b|\bbetween 0(?:\.0)? and 1\b|\b0 to 1\b/i;

/** `m` as a value of `p`, or undefined if it cannot be one; `now` dates "tomorrow" where `p` asks for a date format. */
export function convertMention(m: Mention, p: ParamProfile, now?: Date): Converted | undefined {
  const param = p.param;
  if (param.enum !== undefined) return enumMember(m, param.enum);
  switch (param.type) {
    // A value the schema does not type is read from the text as text, the way catalogs mostly mean it.
    case 'any':
    case 'string': {
      // "five replicas" is a count: a number written as a word is no identifier, name or text.
      if (m.spelled === true) return undefined;
      // "500 USD": the code is the currency's, not the amount's, the term's or an id's (unless the
      // parameter's own pattern asks for such a code).
      if (!p.currency && !p.selectivePattern && m.kind !== 'json' && isCurrencyCode(m.text)) return undefined;
      // A currency written by name is sent as its code; a name that is no currency ("Japan", "US") does not go there.
      if (p.currency && (m.kind === 'proper' || m.kind === 'phrase')) {
        const code = currencyCode(m.text);
        if (code !== undefined && p.fits(code)) return { value: code, example: CURRENCY_NAME };
        if (m.kind === 'proper') return undefined;
      }
      if (p.countryCode) {
        const code = m.kind === 'json' ? undefined : countryCode(m.text);
        return code === undefined || !p.fits(code) ? undefined : { value: code, example: 0 };
      }
      // The schema's format and pattern are checked on the call: a value that fails them is not this parameter's.
      const one = asString(m, p, now);
      if (one === undefined || !p.fits(one.value as string)) return undefined;
      return p.selectivePattern ? { ...one, patterned: true } : one;
    }
    case 'number':
    case 'integer':
      // "two messages ago" counts; it does not name message 2.
      if (m.spelled === true && p.roles.has('id')) return undefined;
      return asNumber(m, p);
    case 'array': {
      if (m.kind === 'json') return Array.isArray(m.json) ? { value: coerceItems(m.json, p), example: 0 } : undefined;
      const one = p.itemType === 'number' || p.itemType === 'integer' ? asNumber(m, p) : asString(m, p, now);
      return one === undefined ? undefined : { value: [one.value], example: one.example };
    }
    case 'object':
      return m.kind === 'json' && !Array.isArray(m.json) ? { value: m.json, example: 0 } : undefined;
    default:
      return undefined;
  }
}

function asString(m: Mention, p: ParamProfile, now: Date | undefined): Converted | undefined {
  if (m.kind === 'json') return undefined;
  let value = m.text;
  const relative = m.kind === 'reldate' && p.dateFormat !== undefined && now !== undefined ? relativeDate(m.text, now) : undefined;
  if (relative !== undefined) value = formatDate(relative, p.dateFormat);
  else if (m.date?.wholeMonth === true && p.roles.has('date')) {
    // A month is a date only as the start or end of a range ("from January 2023 to December 2023"); one date is not guessed from it.
    if (p.roles.has('target')) value = formatDate(lastDayOf(m.date), p.dateFormat ?? 'YYYY-MM-DD');
    else if (p.roles.has('source')) value = formatDate(m.date, p.dateFormat ?? 'YYYY-MM-DD');
    else return undefined;
  } else if (m.date !== undefined && p.roles.has('date')) value = withTime(formatDate(m.date, p.dateFormat ?? 'YYYY-MM-DD'), m, p);
  // An amount of money goes without its currency, which has a parameter of its own ("500 USD"): "500".
  else if (m.written !== undefined && m.unit !== undefined && m.money !== true && unitParts(m.unit).length > 0) value = m.written;
  else if (m.kind === 'time' && p.param.format === 'time') value = clockTime(m.text) ?? value;
  const example = exampleScore(value, p.examples);
  if (example.score > 0) return { value: example.canonical ?? value, example: example.score };
  return { value, example: 0 };
}

/** A date and the time written with it, where the parameter asks for both ("YYYY-MM-DD HH:MM"). */
function withTime(date: string, m: Mention, p: ParamProfile): string {
  const clock = p.timeFormat !== undefined && m.time !== undefined ? clockTime(m.time) : undefined;
  if (clock === undefined || p.timeFormat === undefined) return date;
  return `${date}${p.timeFormat.sep}${p.timeFormat.seconds ? clock : clock.slice(0, 5)}`;
}

/** "2pm", "14:30", "9:05 a.m." as RFC 3339's HH:MM:SS, which `format: time` asks for; seconds unsaid are zero. */
function clockTime(text: string): string | undefined {
  const m = /^(\d{1,2})(?::(\d{2}))?(?::(\d{2}))?\s?(?:([ap])\.?m\.?)?$/i.exec(text.trim());
  if (m === null) return undefined;
  let hour = Number(m[1]);
  const half = m[4]?.toLowerCase();
  if (half !== undefined && (hour < 1 || hour > 12)) return undefined;
  if (half === 'p' && hour < 12) hour += 12;
  if (half === 'a' && hour === 12) hour = 0;
  if (hour > 23) return undefined;
  const two = (n: number): string => String(n).padStart(2, '0');
  return `${two(hour)}:${m[2] ?? '00'}:${m[3] ?? '00'}`;
}

function asNumber(m: Mention, p: ParamProfile): Converted | undefined {
  if (m.num === undefined) return undefined;
  let n = m.num;
  // "20%" for a parameter described as a fraction ("e.g., 0.2 for 20%").
  if (m.percent && FRACTION.test(p.param.description ?? '')) n = n / 100;
  const unit = m.unit === undefined ? [] : unitParts(m.unit);
  const converted = unit.length === 1 && unit[0] !== undefined ? convertUnit(n, unit[0], p.units) : undefined;
  if (converted !== undefined) n = converted.value;
  if (p.param.type === 'integer' || p.itemType === 'integer') {
    if (!Number.isInteger(n)) return undefined;
  }
  return { value: n, example: 0 };
}

function enumMember(m: Mention, members: readonly unknown[]): Converted | undefined {
  const text = m.text.trim().toLowerCase();
  for (const member of members) {
    if (typeof member === 'string' && member.toLowerCase() === text) return { value: member, example: ENUM_MATCH };
    if (typeof member === 'number' && m.num === member) return { value: member, example: ENUM_MATCH };
    if (typeof member === 'boolean' && text === String(member)) return { value: member, example: ENUM_MATCH };
  }
  for (const member of members) {
    if (typeof member === 'string' && sameWordForm(text, member.toLowerCase())) return { value: member, example: ENUM_MATCH * 0.8 };
  }
  return undefined;
}

function coerceItems(items: unknown[], p: ParamProfile): unknown[] {
  return items.map((item) => {
    if ((p.itemType === 'number' || p.itemType === 'integer') && typeof item === 'string' && /^-?\d+(\.\d+)?$/.test(item.trim())) {
      return Number(item.trim());
    }
    if (p.itemType === 'string' && (typeof item === 'number' || typeof item === 'boolean')) return String(item);
    return item;
  });
}

/** "African" ≈ "Africa", "nurses" ≈ "nurse": one form is the other plus a short ending. */
export function sameWordForm(a: string, b: string): boolean {
  if (a === b) return true;
  const [short, long] = a.length <= b.length ? [a, b] : [b, a];
  return short.length >= 4 && long.length - short.length <= 3 && long.startsWith(short) && /^[a-z]+$/.test(long.slice(short.length));
}

function exampleScore(value: string, examples: readonly string[]): { score: number; canonical?: string } {
  const v = value.trim().toLowerCase();
  let best: { score: number; canonical?: string } = { score: 0 };
  for (const ex of examples) {
    const e = ex.toLowerCase();
    // A multi-word example met word for word is no coincidence; it is sent as the schema writes it ("JSON" → "json").
    if (e === v) return { score: Math.min(1.3, EXAMPLE_EXACT + 0.15 * (e.split(' ').length - 1)), canonical: ex };
    if (best.score < EXAMPLE_STEM && sameWordForm(v, e)) best = { score: EXAMPLE_STEM, canonical: ex };
  }
  return best;
}
