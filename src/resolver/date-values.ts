/**
 * Calendar dates written in an intent ("May 1, 2024", "1 May 2024", "2024-05-01", "05/01/2024")
 * and the format a parameter asks for. Relative dates ("tomorrow") are only turned into a date
 * when the parameter's description asks for a format; otherwise they stay words.
 */

export interface DateParts {
  year: number;
  month: number;
  day: number;
  /** Written as a month only ("January 2024"): `day` is its first; the range's end is its last. */
  wholeMonth?: boolean;
}

const MONTH_NAMES = ['january', 'february', 'march', 'april', 'may', 'june', 'july', 'august', 'september', 'october', 'november', 'december'];
const MONTHS: ReadonlyMap<string, number> = new Map([
  ...MONTH_NAMES.flatMap((name, i): Array<[string, number]> => [[name, i + 1], [name.slice(0, 3), i + 1]]),
  ['sept', 9],
]);

const MONTH = '(Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?|Sept?(?:ember)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\\.?';
const DAY = '(\\d{1,2})(?:st|nd|rd|th)?';

/** Every absolute date form we read; the named groups say which part is which. */
export const DATE_PATTERN = new RegExp(
  [
    `\\b(?<iy>\\d{4})-(?<im>\\d{1,2})-(?<id>\\d{1,2})\\b`,
    `\\b(?<sy>\\d{4})/(?<sm>\\d{1,2})/(?<sd>\\d{1,2})\\b`,
    `\\b(?<na>\\d{1,2})[/.](?<nb>\\d{1,2})[/.](?<ny>\\d{4})\\b`,
    `\\b${MONTH.replace('(', '(?<mm>')}\\s+${DAY.replace('(', '(?<md>')},?\\s+(?<my>\\d{4})\\b`,
    `\\b${DAY.replace('(', '(?<dd>')}(?:\\s+of)?\\s+${MONTH.replace('(', '(?<dm>')},?\\s+(?<dy>\\d{4})\\b`,
    // A month and year alone ("January 2024"), tried after the forms with a day.
    `\\b${MONTH.replace('(', '(?<wm>')}\\s+(?<wy>\\d{4})\\b`,
  ].join('|'),
  'gi',
);

/** The parts of a DATE_PATTERN match, or undefined when it is no real calendar day. */
export function dateFromMatch(groups: Record<string, string | undefined>): DateParts | undefined {
  const g = groups;
  let parts: DateParts | undefined;
  if (g['iy'] !== undefined) parts = { year: +g['iy'], month: +(g['im'] ?? 0), day: +(g['id'] ?? 0) };
  else if (g['sy'] !== undefined) parts = { year: +g['sy'], month: +(g['sm'] ?? 0), day: +(g['sd'] ?? 0) };
  else if (g['ny'] !== undefined) {
    const a = +(g['na'] ?? 0);
    const b = +(g['nb'] ?? 0);
    // Month first, as in US usage, unless the first number cannot be a month.
    parts = a > 12 ? { year: +g['ny'], month: b, day: a } : { year: +g['ny'], month: a, day: b };
  } else if (g['my'] !== undefined) parts = { year: +g['my'], month: monthOf(g['mm']), day: +(g['md'] ?? 0) };
  else if (g['dy'] !== undefined) parts = { year: +g['dy'], month: monthOf(g['dm']), day: +(g['dd'] ?? 0) };
  else if (g['wy'] !== undefined) parts = { year: +g['wy'], month: monthOf(g['wm']), day: 1, wholeMonth: true };
  return parts !== undefined && isRealDay(parts) ? parts : undefined;
}

function monthOf(word: string | undefined): number {
  return word === undefined ? 0 : (MONTHS.get(word.toLowerCase().replace('.', '')) ?? 0);
}

function isRealDay({ year, month, day }: DateParts): boolean {
  if (month < 1 || month > 12 || day < 1 || year < 1) return false;
  const last = new Date(Date.UTC(year, month, 0)).getUTCDate();
  return day <= last;
}

export type DateFormat = 'YYYY-MM-DD' | 'DD/MM/YYYY' | 'MM/DD/YYYY' | 'DD-MM-YYYY' | 'MM-DD-YYYY' | 'YYYY/MM/DD';

const FORMAT_IN_TEXT = /\b(YYYY-MM-DD|DD\/MM\/YYYY|MM\/DD\/YYYY|DD-MM-YYYY|MM-DD-YYYY|YYYY\/MM\/DD)\b/i;
// An example may carry its time ("2023-05-01T14:00:00"): the date ends where its digits do.
const DATE_EXAMPLE = /\b(\d{4})-(\d{2})-(\d{2})(?![\d-])/;

export interface TimeFormat {
  /** Between the date and the time: "2022-06-20 17:00" or "2022-06-20T17:00". */
  sep: ' ' | 'T';
  seconds: boolean;
}

const DATE_TIME_IN_TEXT = /\b(?:YYYY-MM-DD|DD\/MM\/YYYY|MM\/DD\/YYYY|DD-MM-YYYY|MM-DD-YYYY|YYYY\/MM\/DD)([ T])HH:MM(:SS)?\b/i;
const DATE_TIME_EXAMPLE = /\b\d{4}-\d{2}-\d{2}([ T])\d{2}:\d{2}(:\d{2})?\b/;

/** Whether a description asks for a date with its time ("YYYY-MM-DD HH:MM", or such an example), and how it is written. */
export function timeFormatOf(description: string): TimeFormat | undefined {
  const m = DATE_TIME_IN_TEXT.exec(description) ?? DATE_TIME_EXAMPLE.exec(description);
  if (m === null) return undefined;
  return { sep: m[1] === 'T' ? 'T' : ' ', seconds: m[2] !== undefined };
}

/** The date format a description asks for: a written pattern, or an ISO example date. */
export function dateFormatOf(description: string): DateFormat | undefined {
  const m = FORMAT_IN_TEXT.exec(description);
  if (m?.[1] !== undefined) return m[1].toUpperCase() as DateFormat;
  if (DATE_EXAMPLE.test(description) || /\bISO\s*8601\b/i.test(description)) return 'YYYY-MM-DD';
  return undefined;
}

/** The last day of a whole month ("December 2023" → 2023-12-31), for the end of a range. */
export function lastDayOf(parts: DateParts): DateParts {
  return { year: parts.year, month: parts.month, day: new Date(Date.UTC(parts.year, parts.month, 0)).getUTCDate() };
}

export function formatDate({ year, month, day }: DateParts, format: DateFormat = 'YYYY-MM-DD'): string {
  const y = String(year).padStart(4, '0');
  const m = String(month).padStart(2, '0');
  const d = String(day).padStart(2, '0');
  switch (format) {
    case 'DD/MM/YYYY':
      return `${d}/${m}/${y}`;
    case 'MM/DD/YYYY':
      return `${m}/${d}/${y}`;
    case 'DD-MM-YYYY':
      return `${d}-${m}-${y}`;
    case 'MM-DD-YYYY':
      return `${m}-${d}-${y}`;
    case 'YYYY/MM/DD':
      return `${y}/${m}/${d}`;
    default:
      return `${y}-${m}-${d}`;
  }
}

const WEEKDAYS = ['sunday', 'monday', 'tuesday', 'wednesday', 'thursday', 'friday', 'saturday'];
const COUNT_WORDS: ReadonlyMap<string, number> = new Map(
  ['one', 'two', 'three', 'four', 'five', 'six', 'seven', 'eight', 'nine', 'ten', 'eleven', 'twelve'].map((w, i): [string, number] => [w, i + 1]).concat([['a', 1], ['an', 1]]),
);
const COUNT = `\\d{1,3}|${[...COUNT_WORDS.keys()].join('|')}`;

/**
 * Days named from today: "tomorrow", "next Friday", "this Monday", "last Tuesday", "in three
 * days", "in 2 weeks", "5 days from now", "a week ago".
 */
export const RELATIVE_DATE = new RegExp(
  [
    'day after tomorrow|day before yesterday|today|tomorrow|yesterday',
    `(?:next|this|coming|last|past)\\s+(?:${WEEKDAYS.join('|')})`,
    `in\\s+(?:${COUNT})\\s+(?:days?|weeks?)`,
    `(?:${COUNT})\\s+(?:days?|weeks?)\\s+(?:from\\s+(?:now|today)|ago)`,
  ]
    .map((x) => `\\b(?:${x})\\b`)
    .join('|'),
  'gi',
);

const RELATIVE_OFFSET: ReadonlyMap<string, number> = new Map([
  ['today', 0],
  ['tomorrow', 1],
  ['yesterday', -1],
  ['day after tomorrow', 2],
  ['day before yesterday', -2],
]);

/** How many days and weeks an "in three days" or "2 weeks ago" counts: the number, for a parameter that counts days. */
export function relativeCount(words: string): { num: number; unit: string } | undefined {
  const m = new RegExp(`(?:^|\\s)(${COUNT})\\s+(days?|weeks?)\\b`, 'i').exec(words);
  if (m === null) return undefined;
  const raw = (m[1] ?? '').toLowerCase();
  const num = COUNT_WORDS.get(raw) ?? Number(raw);
  return { num, unit: (m[2] ?? '').toLowerCase() };
}

/** A day named from `now` (its UTC calendar day), or undefined when the words name none. */
export function relativeDate(words: string, now: Date): DateParts | undefined {
  const text = words.toLowerCase().replace(/\s+/g, ' ').trim();
  const today = now.getUTCDay();
  let offset = RELATIVE_OFFSET.get(text);
  const weekday = /^(next|this|coming|last|past) (\w+)$/.exec(text);
  if (offset === undefined && weekday !== null) {
    const day = WEEKDAYS.indexOf(weekday[2] ?? '');
    if (day < 0) return undefined;
    const ahead = (day - today + 7) % 7;
    // "next"/"coming" Friday: the first one after today; "this": today or the next one; "last": the one before today.
    if (weekday[1] === 'this') offset = ahead;
    else if (weekday[1] === 'last' || weekday[1] === 'past') offset = -((today - day + 7) % 7 || 7);
    else offset = ahead || 7;
  }
  const count = offset === undefined ? relativeCount(text) : undefined;
  if (count !== undefined) offset = count.num * (count.unit.startsWith('week') ? 7 : 1) * (text.endsWith('ago') ? -1 : 1);
  if (offset === undefined) return undefined;
  const d = new Date(Date.UTC(now.getUTCFullYear(), now.getUTCMonth(), now.getUTCDate() + offset));
  return { year: d.getUTCFullYear(), month: d.getUTCMonth() + 1, day: d.getUTCDate() };
}
