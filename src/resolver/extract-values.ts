/**
 * The values an intent spells out, with where they stand: quoted strings, URLs, e-mails, paths,
 * IP addresses, dates, times, versions, numbers with their unit, identifiers and capitalised
 * names. Kinds are tried from the most specific to the least, and a character claimed by one
 * value is not read again, so "2024-05-01" is a date and never three numbers.
 */
import { DATE_PATTERN, RELATIVE_DATE, dateFromMatch, relativeCount } from './date-values.js';
import type { Mention } from './mention.js';
import { jsonLiterals, quoted } from './quoted-values.js';
import { unitParts } from './units.js';
import { currencyCode } from './currency-codes.js';
import { addressMentions } from './address-parts.js';


const URL = /\b(?:https?|ftp|s3|gs|file):\/\/[^\s"'<>]+|\bwww\.[^\s"'<>]+/gi;
const EMAIL = /(?<![\w.+-])[\w.+-]+@[\w-]+(?:\.[\w-]+)+\b/g;
const IP = /\b(?:\d{1,3}\.){3}\d{1,3}(?:\/\d{1,2})?\b/g;
const TIME = /\b(?:[01]?\d|2[0-3]):[0-5]\d(?::[0-5]\d)?(?:\s?[ap]\.?m\.?)?(?![\w:])|\b(?:1[0-2]|0?[1-9])\s?[ap]\.?m\.?(?!\w)/gi;
const VERSION = /\bv?\d+\.\d+\.\d+(?:[-+][\w.]+)?\b/g;
// Every alternative starts only where a run of word characters starts: `\b` would retry inside
// a long run ("1-1-1-…") and make the scan quadratic.
const PATH =
  /(?<![\w)])(?:~|\.{1,2})?\/(?:[\w.-]+\/)*[\w.-]+|(?<![\w-])[A-Za-z]:\\[\w.\\-]+|(?<![\w.-])[\w-]+(?:\/[\w.-]+){2,}|(?<![\w.-])[\w-]+\/[\w-]*\.[a-z][a-z0-9]{0,4}\b|(?<![\w.-])[\w-]{2,}\.[a-z][a-z0-9]{1,4}\b(?![.@\w])/g;
// A full stop after the number ends the sentence ("call 123-456-7890."); one before a digit continues it.
const PHONE = /(?<![\w.-])\+?(?:\(\d{2,4}\)\s?|\d{2,4}[-.])\d{3,4}[-.]\d{3,5}(?![\w-]|\.\d)/g;
const RANGE = /(?<![\w.-])\d+(?:\.\d+)?\s?[-–]\s?\d+(?:\.\d+)?(?![\w.-])/g;
const NUMBER =
  /(?<![\w.$€£-])(-)?([$€£])?(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?:(?<=\d)([A-Za-z][A-Za-z0-9]*))?(?:\s?(%|percent\b))?(?![\w.]\d)/g;
const ID = /(?<![\w-])(?=[\w-]*\d)(?=[\w-]*[A-Za-z])[A-Za-z0-9][\w-]*[A-Za-z0-9](?![\w-])|(?<![\w-])[a-z]+[A-Z][A-Za-z]*[A-Z][A-Za-z]*(?![\w-])/g;
/** `owner/name`: one slash between two words ("km/h" and "and/or" are turned away by length). */
const SLUG = /(?<![\w/.-])[A-Za-z0-9][\w.-]*\/[\w.-]*[A-Za-z0-9](?![\w/-])/g;
const PROPER = /(?<![\w\u0001])[A-Z][A-Za-z0-9'’&.-]*(?:[ \t]+(?:(?:of|de|del|la|von|van|der)[ \t]+)?[A-Z0-9][A-Za-z0-9'’&.-]*)*/g;
const WORD_IN_NAME = /\S+/g;
const WORDS_AFTER = /^[ \t]*([A-Za-z][A-Za-z'-]*)(?:[ \t]+([A-Za-z][A-Za-z'-]*))?(?:[ \t]+([A-Za-z][A-Za-z'-]*))?/;
/**
 * Counts written as words ("three interesting facts"). "one" is left out: in an intent it is
 * mostly a pronoun ("find me a cute one").
 */
const NUMBER_WORDS: ReadonlyMap<string, number> = new Map(
  ['two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve', 'thirteen', 'fourteen', 'fifteen', 'sixteen', 'seventeen', 'eighteen', 'nineteen', 'twenty']
    .map((w, i): [string, number] => [w, i + 2])
    .concat([['thirty', 30], ['forty', 40], ['fifty', 50], ['hundred', 100]]),
);
const NUMBER_WORD = new RegExp(`(?<![\\w-])(?:${[...NUMBER_WORDS.keys()].join('|')})(?![\\w-])`, 'gi');
/** An age written as one word ("a 49-year-old patient", "8 year old"): the number is the age. */
const AGE = /(?<![\w.-])(\d{1,3})[- ](?:year|yr)s?[- ]old(?![\w-])/gi;
const CURRENCY_AFTER = /^\s([A-Za-z.]+)(?:\s([A-Za-z]+))?/;
const UNIT_AFTER = /^\s?([A-Za-z°µ][A-Za-z°µ/^²³0-9]*)/;
const NOT_UNITS = new Set(['in', 'and', 'or', 'of', 'to', 'for', 'with', 'the', 'a', 'an', 'at', 'on', 'by', 'from', 'as', 'is', 'are', 'was', 'that', 'which', 'who', 'than', 'but', 'into', 'per', 'if', 'so', 'it', 'this']);
const MONEY_WORDS = new Set(['usd', 'dollar', 'dollars', 'eur', 'euro', 'euros', 'gbp', 'pound', 'pounds']);
const ATTACHED_UNITS = new Set([
  'kg', 'g', 'mg', 'lb', 'lbs', 'km', 'm', 'cm', 'mm', 'mi', 'ft', 'in', 's', 'ms', 'h', 'hr', 'hrs', 'min', 'mins',
  'gb', 'mb', 'kb', 'tb', 'ghz', 'mhz', 'hz', 'khz', 'kw', 'w', 'mw', 'v', 'l', 'ml', 'k', 'x', 'st', 'nd', 'rd', 'th',
  'c', 'f', 'px', 'pt', 'db', 'dbm', 'kph', 'mph', 'yr', 'yrs', 'd', 'wk', 'mo',
]);
const ABBREVIATIONS = /(?:Inc|Ltd|Co|Corp|Jr|Sr|St|Dr|Mr|Mrs|Ms|Prof|Bros|Ave|Mt)\.$/;
const NOT_NAMES = new Set(['I', "I'm", 'I’m', "I'd", 'I’d', "I've", 'I’ve', "I'll", 'I’ll', 'ID', 'IDs', 'URL', 'URLs', 'IP', 'API', 'APIs', 'The', 'A', 'An', 'Please', 'My', 'Our', 'This', 'That', 'These', 'Can', 'Could', 'Would', 'Will', 'Is', 'Are', 'Do', 'Does', 'What', 'How', 'Which', 'Who', 'When', 'Where', 'Why', 'If']);

/** An intent names a handful of values; past this many, the rest is noise and only costs time. */
export const MAX_MENTIONS = 100;

/** The values of `text` (already capped and cleaned), ordered by position, at most MAX_MENTIONS. */
export function extractMentions(text: string): Mention[] {
  const taken = new Uint8Array(text.length);
  const out: Mention[] = [];
  const claim = (m: Mention): void => {
    taken.fill(1, m.start, m.end);
    out.push(m);
  };
  const free = (start: number, end: number): boolean => {
    for (let i = start; i < end; i++) if (taken[i] === 1) return false;
    return true;
  };
  for (const m of jsonLiterals(text)) if (free(m.start, m.end)) claim(m);
  for (const m of quoted(text)) if (free(m.start, m.end)) claim(m);
  // An address is read whole and in parts; the parts lie inside the whole.
  const addresses = addressMentions(text);
  for (const whole of addresses) {
    if (whole.part !== 'address' || !free(whole.start, whole.end)) continue;
    for (const m of addresses) if (m.part !== 'address' && whole.start <= m.start && m.end <= whole.end) out.push(m);
    claim(whole);
  }

  scan(text, URL, free, (s, e, v) => claim({ kind: 'url', start: s, end: e, text: v }), true);
  scan(text, EMAIL, free, (s, e, v) => claim({ kind: 'email', start: s, end: e, text: v }));
  scan(text, IP, free, (s, e, v) => claim({ kind: 'ip', start: s, end: e, text: v }));
  DATE_PATTERN.lastIndex = 0;
  for (let m = DATE_PATTERN.exec(text); m !== null; m = DATE_PATTERN.exec(text)) {
    const date = dateFromMatch(m.groups ?? {});
    const end = m.index + m[0].length;
    if (date && free(m.index, end)) claim({ kind: 'date', start: m.index, end, text: m[0], date });
  }
  scan(text, RELATIVE_DATE, free, (s, e, v) => {
    // "in 3 days" is also a count of days, for a parameter that counts them.
    const count = relativeCount(v);
    claim({ kind: 'reldate', start: s, end: e, text: v, ...(count ? { num: count.num, unit: count.unit, words: [count.unit] } : {}) });
  });
  scan(text, TIME, free, (s, e, v) => claim({ kind: 'time', start: s, end: e, text: v }));
  scan(text, VERSION, free, (s, e, v) => claim({ kind: 'version', start: s, end: e, text: v }));
  scan(text, PATH, free, (s, e, v) => claim({ kind: 'path', start: s, end: e, text: v }), true);
  scan(text, PHONE, free, (s, e, v) => claim({ kind: 'phone', start: s, end: e, text: v }));
  scan(text, RANGE, free, (s, e, v) => claim(withUnit(text, { kind: 'range', start: s, end: e, text: v })));
  AGE.lastIndex = 0;
  for (let m = AGE.exec(text); m !== null; m = AGE.exec(text)) {
    const end = m.index + m[0].length;
    // The unit "old" is what an age counts (text-words.ts reads "old" as age).
    if (free(m.index, end)) claim({ kind: 'number', start: m.index, end, text: m[1] ?? '', num: Number(m[1]), unit: 'old', words: ['old'], written: m[0] });
  }
  NUMBER.lastIndex = 0;
  for (let m = NUMBER.exec(text); m !== null; m = NUMBER.exec(text)) {
    const n = number(text, m);
    if (n && free(n.start, n.end)) claim(n);
  }
  NUMBER_WORD.lastIndex = 0;
  for (let m = NUMBER_WORD.exec(text); m !== null; m = NUMBER_WORD.exec(text)) {
    const num = NUMBER_WORDS.get(m[0].toLowerCase());
    const end = m.index + m[0].length;
    if (num !== undefined && free(m.index, end)) claim(withUnit(text, { kind: 'number', start: m.index, end, text: String(num), num, spelled: true, words: wordsAfter(text, end) }));
  }
  scan(text, SLUG, free, (s, e, v) => {
    if (/[\d._-]/.test(v) || v.split('/').every((part) => part.length >= 3)) claim({ kind: 'id', start: s, end: e, text: v });
  });
  scan(text, ID, free, (s, e, v) => claim({ kind: 'id', start: s, end: e, text: v }));
  for (const m of properNames(text, out)) claim(m);
  out.sort((a, b) => a.start - b.start);
  joinTimes(text, out);
  return out.length > MAX_MENTIONS ? out.slice(0, MAX_MENTIONS) : out;
}

/** A time written right after a date ("2022-06-20 17:00", "June 20, 2022 at 5pm") is that date's time too. */
function joinTimes(text: string, sorted: Mention[]): void {
  for (let i = 0; i + 1 < sorted.length; i++) {
    const date = sorted[i] as Mention;
    const time = sorted[i + 1] as Mention;
    if (date.kind === 'date' && time.kind === 'time' && /^\s*,?\s*(?:at\s+)?$/i.test(text.slice(date.end, time.start))) date.time = time.text;
  }
}

function scan(
  text: string,
  re: RegExp,
  free: (s: number, e: number) => boolean,
  take: (start: number, end: number, value: string) => void,
  trimTail = false,
): void {
  re.lastIndex = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    let value = m[0];
    // A sentence's full stop or a closing bracket is not part of a URL or path.
    if (trimTail) value = value.replace(/[.,;:!?)\]}'"]+$/, '');
    const end = m.index + value.length;
    if (value.length > 0 && free(m.index, end)) take(m.index, end, value);
  }
}

function number(text: string, m: RegExpExecArray): Mention | undefined {
  const [, minus, currency, whole, fraction, attached, percent] = m;
  if (attached !== undefined && !ATTACHED_UNITS.has(attached.toLowerCase())) return undefined;
  const num = Number(`${minus ?? ''}${(whole ?? '').replace(/,/g, '')}${fraction ?? ''}`);
  if (!Number.isFinite(num)) return undefined;
  const mention: Mention = {
    kind: 'number',
    start: m.index,
    end: m.index + m[0].length,
    text: `${minus ?? ''}${(whole ?? '').replace(/,/g, '')}${fraction ?? ''}`,
    num,
  };
  if (currency !== undefined) mention.money = true;
  if (percent !== undefined) mention.percent = true;
  if (attached !== undefined) {
    mention.unit = attached.toLowerCase();
    mention.written = m[0];
  }
  else if (percent === undefined) withUnit(text, mention);
  mention.words = wordsAfter(text, mention.end);
  if (mention.unit !== undefined && MONEY_WORDS.has(mention.unit)) mention.money = true;
  else if (mention.money !== true && currencyAfter(text, mention.end)) mention.money = true;
  return mention;
}

/** Up to three words right after a number, not across punctuation or another number ("5 interesting facts"). */
function wordsAfter(text: string, end: number): string[] {
  const m = WORDS_AFTER.exec(text.slice(end, end + 48));
  return m === null ? [] : m.slice(1).filter((w): w is string => w !== undefined).map((w) => w.toLowerCase());
}

/** Whether a currency's name follows ("1000 US dollars", "50 Swiss francs"): the number is an amount of money. */
function currencyAfter(text: string, end: number): boolean {
  const next = CURRENCY_AFTER.exec(text.slice(end, end + 32));
  if (next === null) return false;
  const [, one, two] = next;
  return (two !== undefined && currencyCode(`${one} ${two}`) !== undefined) || currencyCode(one ?? '') !== undefined;
}

/**
 * Reads the word after a number as its unit. The span grows over a known unit ("5 km") only:
 * another word ("2 employees") stays visible as a cue, and a currency code ("100 USD") stays a
 * value of its own ("convert 100 USD to EUR").
 */
function withUnit(text: string, m: Mention): Mention {
  const after = UNIT_AFTER.exec(text.slice(m.end, m.end + 24));
  const word = after?.[1];
  if (after === null || word === undefined || NOT_UNITS.has(word.toLowerCase())) return m;
  m.unit = word.toLowerCase();
  // A currency ("100 USD", "500 Euros") stays a value of its own, for the parameter that asks for one.
  if (unitParts(word).length > 0 && !MONEY_WORDS.has(m.unit)) {
    m.end += after[0].length;
    m.written = text.slice(m.start, m.end);
  }
  return m;
}

/** Runs of capitalised words ("New York", "Golden State Warriors"), minus sentence-initial verbs. */
function properNames(text: string, claimed: readonly Mention[]): Mention[] {
  // Claimed values are masked so that a name never runs into or across them.
  const parts: string[] = [];
  let at = 0;
  for (const c of [...claimed].sort((a, b) => a.start - b.start)) {
    if (c.start < at) continue;
    parts.push(text.slice(at, c.start), '\u0001'.repeat(c.end - c.start));
    at = c.end;
  }
  parts.push(text.slice(at));
  const masked = parts.join('');
  const out: Mention[] = [];
  PROPER.lastIndex = 0;
  for (let m = PROPER.exec(masked); m !== null; m = PROPER.exec(masked)) {
    const all: Array<{ word: string; start: number }> = [];
    WORD_IN_NAME.lastIndex = 0;
    for (let w = WORD_IN_NAME.exec(m[0]); w !== null; w = WORD_IN_NAME.exec(m[0])) all.push({ word: w[0], start: m.index + w.index });
    for (const words of sentences(all)) {
      const name = nameOf(words);
      if (name !== undefined) out.push(name);
    }
  }
  return out;

  /** A run's words as a name: the sentence's first word (mostly a verb) and words that are never names left out. */
  function nameOf(words: Array<{ word: string; start: number }>): Mention | undefined {
    const start = words[0]?.start ?? 0;
    let first = 0;
    // The first word of a sentence is capitalised anyway, and in an intent it is mostly a verb.
    if (sentenceStart(text, start)) first = 1;
    while (first < words.length && NOT_NAMES.has(words[first]?.word ?? '')) first++;
    const head = words[first];
    const tail = words[words.length - 1];
    if (head === undefined || tail === undefined) return undefined;
    let value = text.slice(head.start, tail.start + tail.word.length).replace(/['’]s$/, '');
    if (!ABBREVIATIONS.test(value)) value = value.replace(/[.'’-]+$/, '');
    if (!value || NOT_NAMES.has(value) || /^[\d.]+$/.test(value)) return undefined;
    // One word of random-looking case ("LZXZMlLsw") is an identifier, not a name.
    const kind = !value.includes(' ') && value.length >= 6 && /[a-z][A-Z]/.test(value) ? 'id' : 'proper';
    return { kind, start: head.start, end: head.start + value.length, text: value };
  }
}

/**
 * A run of capitalised words cut where a sentence ends inside it ("… in Germany. I need …"): a
 * word ending in a full stop that is not an abbreviation ("St.", "Dr.") or an initial ("J.").
 */
function sentences<W extends { word: string }>(words: readonly W[]): W[][] {
  const out: W[][] = [];
  let current: W[] = [];
  for (const w of words) {
    current.push(w);
    if (/[.!?]$/.test(w.word) && !ABBREVIATIONS.test(w.word) && !/^[A-Z]\.$/.test(w.word) && !/\.[A-Za-z]/.test(w.word)) {
      out.push(current);
      current = [];
    }
  }
  if (current.length > 0) out.push(current);
  return out;
}

function sentenceStart(text: string, index: number): boolean {
  const before = text.slice(Math.max(0, index - 3), index);
  return index === 0 || /(^|[.!?\n[(]\s*)$/.test(before) || /^\s*$/.test(text.slice(0, index));
}
