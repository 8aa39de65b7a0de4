/**
 * Values that only a parameter's schema makes visible: words equal (or nearly) to one of its
 * listed examples or allowed values ("the lake" once `location` says "(e.g., river, lake)"), and
 * the words right in front of one of its name words ("Sodium chloride chemical" for
 * `chemical_name`).
 */
import type { Mention } from './mention.js';
import { isTextual, type ParamProfile } from './param-profile.js';
import { STOPWORDS, sameStem, type Token } from './text-words.js';
import { sameWordForm } from './value-coercion.js';
import { currencyNameSpans } from './currency-codes.js';

/** Spans equal to an example or allowed value that are not already a value on their own, as `phrase` mentions. */
export function exampleMentions(text: string, tokens: readonly Token[], profiles: readonly ParamProfile[], existing: readonly Mention[]): Mention[] {
  const lower = text.toLowerCase();
  const out: Mention[] = [];
  const seen = new Set<string>();
  const push = (at: number, end: number): void => {
    const key = `${at}:${end}`;
    if (seen.has(key)) return;
    seen.add(key);
    const covered = existing.some((m) => (m.kind === 'quoted' && m.start <= at && end <= m.end) || (m.start === at && m.end === end));
    if (!covered) out.push({ kind: 'phrase', start: at, end, text: text.slice(at, end) });
  };
  for (const p of profiles) {
    const wanted = [...p.examples, ...(p.param.enum ?? []).filter((v): v is string => typeof v === 'string')];
    for (const ex of wanted) {
      const e = ex.toLowerCase();
      if (e.length < 2) continue;
      for (let at = lower.indexOf(e); at >= 0; at = lower.indexOf(e, at + 1)) {
        if (at > 0 && /[a-z0-9]/.test(lower[at - 1] ?? '')) continue;
        let end = at + e.length;
        // A short ending ("Africa" → "African") is allowed; the value then drops it.
        let tail = 0;
        while (tail < 4 && /[a-z]/.test(lower[end + tail] ?? '')) tail++;
        if (tail > 0 && (tail > 3 || e.length < 4 || /[^a-z]/.test(e.slice(-1)))) continue;
        end += tail;
        if (!/[a-z0-9]/.test(lower[end] ?? '')) push(at, end);
      }
      // The intent may use the shorter form ("grasp" for the example "grasping").
      if (e.length >= 5 && /^[a-z]+$/.test(e)) {
        for (const t of tokens) if (t.lower.length < e.length && sameWordForm(t.lower, e)) push(t.start, t.end);
      }
    }
  }
  return out;
}

const MAX_NEIGHBOUR_WORDS = 3;
/** Name words too general to mark the head of a value ("the ID", "the type"). */
const GENERIC_HEADS = new Set(['id', 'nam', 'typ', 'valu', 'data', 'info', 'number', 'detail']);

/**
 * The words in front of a parameter's name word ("the Sodium chloride chemical", "cardio
 * workouts"): up to three content words, not crossing punctuation, a stop word or another value
 * (a capitalised name may be taken in whole). The sentence's first word is a verb, not a value.
 * These are guesses, marked `modifier`. Words after a name word are not taken: without a
 * parser "branch main" cannot be told from "parts located".
 */
export function neighbourMentions(text: string, tokens: readonly Token[], profiles: readonly ParamProfile[], existing: readonly Mention[]): Mention[] {
  const heads: string[] = [];
  for (const p of profiles) if (isTextual(p.param) && p.param.enum === undefined) for (const n of p.name) if (!GENERIC_HEADS.has(n)) heads.push(n);
  if (heads.length === 0) return [];
  const out: Mention[] = [];
  const owner = (t: Token): Mention | undefined => existing.find((m) => t.start >= m.start && t.end <= m.end);
  const isName = (t: Token): boolean => profiles.some((p) => p.name.some((n) => sameStem(t.stem, n)));
  const joined = (a: Token, b: Token): boolean => !/[^\s]/.test(text.slice(a.end, b.start).replace(/['’]s?$/, ''));
  const usable = (t: Token): boolean => {
    const o = owner(t);
    return !STOPWORDS.has(t.lower) && (o === undefined || o.kind === 'proper');
  };
  const push = (from: number, to: number): void => {
    const run = tokens.slice(from, to + 1);
    // "the dance style" names the parameter `dance_style`; it is not its value.
    if (run.length === 0 || run.every(isName)) return;
    const start = (run[0] as Token).start;
    const end = (run[run.length - 1] as Token).end;
    if (!existing.some((m) => m.start === start && m.end === end)) out.push({ kind: 'phrase', start, end, text: text.slice(start, end), modifier: true });
  };
  for (let k = 1; k < tokens.length; k++) {
    const head = tokens[k] as Token;
    if (owner(head) || !heads.some((h) => sameStem(head.stem, h))) continue;
    let first = k;
    for (let i = k - 1; i >= 1 && k - i <= MAX_NEIGHBOUR_WORDS; i--) {
      const t = tokens[i] as Token;
      if (!usable(t) || !joined(t, tokens[i + 1] as Token) || /[.!?]\s*$/.test(text.slice(0, t.start))) break;
      first = i;
    }
    if (first < k) push(first, k - 1);
  }
  return out;
}

/** Currencies written by name ("100 US dollars", "in Japanese yen"), when a parameter asks for a currency. */
export function currencyMentions(text: string, profiles: readonly ParamProfile[], existing: readonly Mention[]): Mention[] {
  if (!profiles.some((p) => p.currency)) return [];
  const out: Mention[] = [];
  for (const span of currencyNameSpans(text)) {
    const inside = existing.some((m) => m.start <= span.start && span.end <= m.end && (m.kind === 'quoted' || m.end - m.start > span.end - span.start));
    if (!inside && !existing.some((m) => m.start === span.start && m.end === span.end)) out.push({ kind: 'phrase', start: span.start, end: span.end, text: text.slice(span.start, span.end) });
  }
  return out;
}
