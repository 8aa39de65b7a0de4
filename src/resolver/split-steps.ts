/**
 * Multi-step intents: "check the quota and then send the report to #ops" is two calls, in that
 * order. An intent is split only where English says "in sequence" outside quotes, backticks and
 * brackets ("and then", "then", "after that,", "next,", "finally", a numbered list), so an
 * exact call (`tool_id {…}`, `tool_id(a=1)`) and any quoted value are never cut. A plain "and"
 * or "; " is only a candidate (`weak`): "search for cats and dogs", "send it to Alice and Bob"
 * and "I got the code 456789; could you verify me?" are one
 * call, so the caller keeps such a split only when both sides start with a word that starts a tool
 * of this catalog and each side resolves on its own (see step-plan.ts). A conditional ("if the
 * quota is low, then …") is never split: the gateway cannot evaluate the condition, and running
 * the second half regardless would be a guess.
 */
import type { Tool } from '../registry/types.js';

export const DEFAULT_MAX_STEPS = 5;

export interface Step {
  text: string;
  /** Joined to the step before by a plain "and": it stands only if both sides resolve on their own. */
  weak: boolean;
  /** The clause the step was cut from at a plain "and" (its own text when it was not). */
  clause: string;
}

export type StepSplit =
  /** Not a sequence: resolve the intent as written. */
  | { kind: 'single' }
  | { kind: 'steps'; steps: Step[] }
  /** More steps than one intent may have: nothing should run. */
  | { kind: 'too-many'; count: number; reason: string };

export interface SplitOptions {
  /** Most steps one intent may have (default 5). */
  maxSteps?: number;
  /** Words that begin an action in this catalog (`catalogActionWords`); without them a plain "and" never splits. */
  actionWords?: ReadonlySet<string>;
}

/** Generic English sequencing, each at the start of a clause; `\s*` after the cue eats its comma. */
const CUES = [
  /(?:,\s*|\s+)and\s+then\b,?\s*/gi,
  /(?:[,;.!?]\s*|\s+)then\b,?\s*/gi,
  /(?:[,;.!?]\s*|^|\s+and\s+)(?:after\s+(?:that|this)|afterwards?|next)\s*,\s*/gi,
  /\s+and\s+(?:after\s+(?:that|this)|afterwards?)\s+/gi,
  /(?:[,;.!?]\s*|\s+and\s+)(?:finally|lastly)\b,?\s*/gi,
];
/** "since then", "by then", "until then": "then" as a point in time, not a step. */
const TIME_THEN = /\b(?:since|by|until|till|back|from|even|just|only|now|and)\s*$/i;
const CONDITIONAL = /\b(?:if|unless|when|whenever|otherwise|whether|in\s+case)\b/i;
const LEADING_CUE = /^(?:(?:and|also|then|first(?:ly)?|second(?:ly)?|finally|lastly|next|after\s+(?:that|this)|afterwards?)\b[\s,:]*)+/i;
const TRAILING_CUE = /(?:[\s,;:.]+(?:and|also)\b)*[\s,;:.]*$/i;
const POLITE = /^(?:please\s+|(?:can|could|would|will)\s+you\s+(?:please\s+)?|i\s+(?:want|need|would\s+like|'d\s+like)\s+(?:you\s+)?to\s+)/i;
/** Words that start a clause without being an action, whatever the catalog's tools are called. */
const CLOSED = new Set(
  'a an the this that these those it its my our your their his her i we you they he she me us them and or but also to of in on at for by with from as is are be was were do does did can could will would should may might not no all any some each every how what which who why where there here then so'.split(' '),
);

export function splitSteps(intent: string, options: SplitOptions = {}): StepSplit {
  const maxSteps = options.maxSteps ?? DEFAULT_MAX_STEPS;
  const text = intent.trim();
  if (hasOutside(text, CONDITIONAL, openPositions(text))) return { kind: 'single' };
  const strong = (numberedItems(text) ?? [text])
    .flatMap(cutAtCues)
    .map(clean)
    .filter((s) => /[\p{L}\p{N}]/u.test(s));
  if (strong.length > maxSteps) return { kind: 'too-many', count: strong.length, reason: tooMany(strong.length, maxSteps) };

  const words = options.actionWords;
  const steps = strong.flatMap((part) => (words ? cutAtAnd(part, words) : [part]).map((piece, j): Step => ({ text: piece, weak: j > 0, clause: part })));
  // A plain "and" may only add steps within the cap: past it, those candidates are dropped, not refused.
  const kept = steps.length > maxSteps ? strong.map((t): Step => ({ text: t, weak: false, clause: t })) : steps;
  return kept.length < 2 ? { kind: 'single' } : { kind: 'steps', steps: kept };
}

/**
 * The first word of every tool's description, and of its id when the id has more than one word
 * (`send_message`, not `Discount`): what an action in this catalog starts with.
 */
export function catalogActionWords(tools: Iterable<Tool>): Set<string> {
  const words = new Set<string>();
  for (const tool of tools) {
    const idWords = tool.id.replace(/([a-z0-9])([A-Z])/g, '$1 $2').split(/[^A-Za-z]+/).filter((w) => w.length > 0);
    const idWord = idWords.length > 1 ? idWords[0] : undefined;
    const descriptionWord = /^[^A-Za-z]*([A-Za-z]+)/.exec(tool.description ?? '')?.[1];
    for (const word of [idWord, descriptionWord]) {
      const w = word?.toLowerCase();
      if (w !== undefined && w.length > 2 && !CLOSED.has(w)) words.add(w);
    }
  }
  return words;
}

export function tooMany(count: number, max: number): string {
  return `this intent has ${count} steps, and one intent may have at most ${max}; nothing was run: write the steps as separate intents, in order`;
}

/** `open[i]`: position i is inside quotes, backticks or brackets (an unclosed one runs to the end). */
function openPositions(text: string): boolean[] {
  const open = new Array<boolean>(text.length).fill(false);
  const closers: Record<string, string> = { '"': '"', '`': '`', '\u201c': '\u201d', '\u2018': '\u2019', "'": "'", '(': ')', '[': ']', '{': '}' };
  const stack: string[] = [];
  for (let i = 0; i < text.length; i++) {
    const c = text[i] as string;
    const top = stack.at(-1);
    if (top !== undefined) open[i] = true;
    if (top === '"' || top === '`' || top === '\u201d' || top === "'" || top === '\u2019') {
      if (c === '\\' && top !== '`') i++;
      else if (c === top && (top !== "'" && top !== '\u2019' ? true : !/[\p{L}\p{N}]/u.test(text[i + 1] ?? ''))) stack.pop();
      continue;
    }
    if (c === ')' || c === ']' || c === '}') {
      if (top === c) stack.pop();
      continue;
    }
    const closer = closers[c];
    // A single quote opens a quotation only after a non-letter: "don't" and "users' files" are words.
    if (closer === undefined || ((c === "'" || c === '\u2018') && /[\p{L}\p{N}]/u.test(text[i - 1] ?? ''))) continue;
    stack.push(closer);
    open[i] = true;
  }
  return open;
}

function outside(open: boolean[], start: number, end: number): boolean {
  for (let i = start; i < end; i++) if (open[i]) return false;
  return true;
}

function hasOutside(text: string, pattern: RegExp, open: boolean[]): boolean {
  for (const m of text.matchAll(new RegExp(pattern.source, `${pattern.flags.replace('g', '')}g`))) if (outside(open, m.index, m.index + m[0].length)) return true;
  return false;
}

/** "1. … 2. …" or "1) … 2) …": the items, when they count up from 1 outside quotes; the words before the list go with item 1. */
function numberedItems(text: string): string[] | undefined {
  const open = openPositions(text);
  const marks: Array<{ start: number; end: number }> = [];
  for (const m of text.matchAll(/(?:^|\s)(\d{1,2})[.)]\s+/g)) {
    if (Number(m[1]) === marks.length + 1 && outside(open, m.index, m.index + m[0].length)) marks.push({ start: m.index, end: m.index + m[0].length });
  }
  const [first] = marks;
  if (first === undefined || marks.length < 2) return undefined;
  const items = marks.map((mark, i) => text.slice(mark.end, marks[i + 1]?.start ?? text.length));
  items[0] = `${text.slice(0, first.start).trim()} ${items[0] ?? ''}`;
  return items;
}

function cutAtCues(text: string): string[] {
  const open = openPositions(text);
  const cuts: Array<{ start: number; end: number }> = [];
  for (const cue of CUES) {
    for (const m of text.matchAll(cue)) {
      const cut = { start: m.index, end: m.index + m[0].length };
      if (!outside(open, cut.start, cut.end)) continue;
      if (/then\b/i.test(m[0]) && !/and\s+then/i.test(m[0]) && TIME_THEN.test(text.slice(0, cut.start))) continue;
      if (!cuts.some((c) => c.start < cut.end && cut.start < c.end)) cuts.push(cut);
    }
  }
  cuts.sort((x, y) => x.start - y.start);
  const parts: string[] = [];
  let start = 0;
  for (const cut of cuts) {
    parts.push(text.slice(start, cut.start));
    start = cut.end;
  }
  parts.push(text.slice(start));
  return parts;
}

/** Splits at a plain "and" or "; " only where the words after it start an action of this catalog, as do the words before. */
function cutAtAnd(part: string, actionWords: ReadonlySet<string>): string[] {
  const open = openPositions(part);
  const pieces: string[] = [];
  let start = 0;
  for (const m of part.matchAll(/,?\s+and\s+(?:also\s+)?|;\s+/gi)) {
    if (!outside(open, m.index, m.index + m[0].length)) continue;
    const left = part.slice(start, m.index);
    const right = part.slice(m.index + m[0].length);
    // "search for and send the email": a left side that ends on "for" shares the right side's object.
    const dangling = CLOSED.has(/([A-Za-z]+)\W*$/.exec(left)?.[1]?.toLowerCase() ?? '');
    if (!dangling && startsAction(left, actionWords, 'i') && startsAction(right, actionWords, '') && /\s\S/.test(right.trim())) {
      pieces.push(clean(left));
      start = m.index + m[0].length;
    }
  }
  pieces.push(clean(part.slice(start)));
  return pieces.filter((p) => p.length > 0);
}

/** `flags` '' after the "and": a word in capitals there ("Bob", "B") is a name, not an action. */
function startsAction(text: string, actionWords: ReadonlySet<string>, flags: '' | 'i'): boolean {
  const first = new RegExp('^[a-z]+', flags).exec(text.trim().replace(POLITE, ''))?.[0]?.toLowerCase();
  return first !== undefined && !CLOSED.has(first) && actionWords.has(first);
}

function clean(step: string): string {
  return step
    .trim()
    .replace(LEADING_CUE, '')
    .replace(TRAILING_CUE, '')
    .trim();
}
