/**
 * Quoted text and JSON literals in an intent. Quoted text keeps what it is inside the quotes
 * (a number, a date, a URL…) so that "the ID \"87\"" can still fill an integer.
 */
import { DATE_PATTERN, dateFromMatch } from './date-values.js';
import type { Mention, MentionKind } from './mention.js';

const QUOTE_PAIRS: ReadonlyArray<readonly [string, string]> = [['"', '"'], ['“', '”'], ['«', '»'], ['‘', '’']];
// A single quote opens only after a space or bracket and closes before one, so apostrophes
// ("Don't", "Inc.'s") are not quotes.
const SINGLE_QUOTED = /(?<=^|[\s([{:=,])'([^'\n]{1,500}?)'(?=$|[\s.,;:!?)\]}])/g;
const FUNCTION_WORDS = new Set(['of', 'the', 'and', 'for', 'in', 'on', 'at', 'to', 'a', 'an', 'de', 'la', 'del', 'von', 'van', 'der', 'or', 'with']);
/** JSON literals are looked for only this far from their opening bracket, and only this often. */
const MAX_JSON_CHARS = 2048;
const MAX_JSON_TRIES = 16;

export function quoted(text: string): Mention[] {
  const out: Mention[] = [];
  for (const [open, close] of QUOTE_PAIRS) {
    let from = 0;
    for (;;) {
      const s = text.indexOf(open, from);
      if (s < 0) break;
      const e = text.indexOf(close, s + 1);
      if (e < 0) {
        // An unclosed quote runs to the end of the intent.
        const inner = trimUnclosed(text.slice(s + 1));
        if (inner) out.push(typed({ kind: 'quoted', start: s, end: text.length, text: inner }));
        break;
      }
      const inner = trimClosed(text.slice(s + 1, e));
      if (inner) out.push(typed({ kind: 'quoted', start: s, end: e + 1, text: inner }));
      from = e + 1;
    }
  }
  SINGLE_QUOTED.lastIndex = 0;
  for (let m = SINGLE_QUOTED.exec(text); m !== null; m = SINGLE_QUOTED.exec(text)) {
    const inner = trimClosed(m[1] ?? '');
    if (inner) out.push(typed({ kind: 'quoted', start: m.index, end: m.index + m[0].length, text: inner }));
  }
  return out.sort((a, b) => a.start - b.start);
}

/**
 * A quoted value, without the sentence's punctuation that English puts inside the quotes when
 * the value is one token ("my token is "abcd1234."" is `abcd1234`); a quoted sentence keeps its
 * full stop.
 */
function trimClosed(raw: string): string {
  const inner = raw.trim();
  if (/\s/.test(inner)) return inner;
  const bare = inner.replace(/[.,;:]+$/, '');
  return bare === '' ? inner : bare;
}

/**
 * The text after an unclosed quote. A sentence keeps its full stop ("Don't forget the cat.");
 * a name or an identifier loses it ("Cypress Point Club.", "rOBhSVKGVKe.").
 */
function trimUnclosed(raw: string): string {
  const inner = raw.trim();
  const bare = inner.replace(/[.!?,;:]+$/, '');
  const words = bare.split(/\s+/);
  const sentence = words.length >= 3 && words.slice(1).some((w) => /^[a-z]/.test(w) && !FUNCTION_WORDS.has(w));
  return sentence ? inner : bare;
}

const WHOLE: ReadonlyArray<readonly [MentionKind, RegExp]> = [
  ['url', /^(?:(?:https?|ftp|s3|gs|file):\/\/|www\.)\S+$/i],
  ['email', /^[\w.+-]+@[\w-]+(?:\.[\w-]+)+$/],
  ['ip', /^(?:\d{1,3}\.){3}\d{1,3}$/],
  ['time', /^(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?:\s?[ap]\.?m\.?)?$/i],
  ['path', /^(?:~|\.{1,2})?\/\S*$|^[A-Za-z]:\\\S*$|^[\w-]+(?:\/[\w.-]+)+$|^[\w-]+\.[a-z][a-z0-9]{1,4}$/],
  ['id', /^(?=.*\d)(?=.*[A-Za-z])[A-Za-z0-9_-]+$|^[a-z]+[A-Z][A-Za-z]*[A-Z][A-Za-z]*$/],
];

/** Quoted text that is a number, a date, a URL… keeps that reading too. */
function typed(m: Mention): Mention {
  const t = m.text.replace(/,(?=\d{3}\b)/g, '');
  if (/^-?\d+(\.\d+)?$/.test(t)) {
    m.num = Number(t);
    m.inner = 'number';
    return m;
  }
  DATE_PATTERN.lastIndex = 0;
  const d = DATE_PATTERN.exec(m.text);
  if (d !== null && d.index === 0 && d[0].length === m.text.length) {
    const date = dateFromMatch(d.groups ?? {});
    if (date) {
      m.date = date;
      m.inner = 'date';
      return m;
    }
  }
  for (const [kind, re] of WHOLE) {
    if (re.test(m.text)) {
      m.inner = kind;
      break;
    }
  }
  return m;
}

export function jsonLiterals(text: string): Mention[] {
  const out: Mention[] = [];
  let tries = 0;
  for (let i = 0; i < text.length && tries < MAX_JSON_TRIES; i++) {
    const c = text[i];
    if (c !== '[' && c !== '{') continue;
    tries++;
    const end = matchingBracket(text, i);
    if (end < 0) continue;
    const raw = text.slice(i, end + 1);
    try {
      const json: unknown = JSON.parse(raw);
      if (typeof json === 'object' && json !== null) {
        out.push({ kind: 'json', start: i, end: end + 1, text: raw, json });
        i = end;
      }
    } catch {
      // Not JSON: brackets in prose.
    }
  }
  return out;
}

function matchingBracket(text: string, open: number): number {
  const stack: string[] = [];
  let inString = false;
  const limit = Math.min(text.length, open + MAX_JSON_CHARS);
  for (let i = open; i < limit; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
      continue;
    }
    if (c === '"') inString = true;
    else if (c === '[' || c === '{') stack.push(c === '[' ? ']' : '}');
    else if (c === ']' || c === '}') {
      if (stack.pop() !== c) return -1;
      if (stack.length === 0) return i;
    }
  }
  return -1;
}
