import type { ToolParameter } from '../registry/types.js';
import { valueMatches } from './score-call.js';

/**
 * How well the text an intent was written in supports one value of a call that a model wrote:
 * a model's value is only as good as the words it came from. Found in the intent: 1; what the
 * rule-based filler also read: 0.9; the schema's default: 0.8; found in the conversation: 0.7; a
 * boolean (read from the sense, never spelled out): 0.6; an enum member the words do not name:
 * 0.5; anything else is not in the text at all, a guess: 0.
 */

export interface EvidenceText {
  intent: string;
  context?: string;
}

export interface ValueEvidence {
  score: number;
  /** In words, for the resolution's notes. */
  how: string;
}

const FOUND = 1;
const AGREES_WITH_RULES = 0.9;
const DEFAULT = 0.8;
const IN_CONTEXT = 0.7;
const BOOLEAN = 0.6;
const ENUM_CHOICE = 0.5;
const MAX_DEPTH = 8;
const MAX_LEAVES = 64;

/** Lower-case, compatibility-folded, one space between words: "New  York" is "new york". */
export function foldText(text: string): string {
  return text.normalize('NFKC').toLowerCase().replace(/\s+/g, ' ').trim();
}

/** `needle` in `hay` with no letter or digit glued on either side ("5" is not in "15"). */
export function containsWords(hay: string, needle: string): boolean {
  if (needle === '') return false;
  for (let at = hay.indexOf(needle); at >= 0; at = hay.indexOf(needle, at + 1)) {
    const before = hay[at - 1];
    const after = hay[at + needle.length];
    if (!isWordChar(before) && !isWordChar(after)) return true;
  }
  return false;
}

function isWordChar(c: string | undefined): boolean {
  return c !== undefined && /[\p{L}\p{N}]/u.test(c);
}

/** Every number the text writes ("1,200", "3.5", "-2"), as numbers. */
export function numbersIn(text: string): number[] {
  const out: number[] = [];
  for (const m of text.matchAll(/-?\d{1,3}(?:,\d{3})+(?:\.\d+)?|-?\d+(?:\.\d+)?/g)) {
    const n = Number(m[0].replaceAll(',', ''));
    if (Number.isFinite(n)) out.push(n);
  }
  return out;
}

/**
 * The evidence for `value` as `param`'s: the weakest of its parts for an array or object. `rules`
 * is what the rule-based filler read for the same parameter of the same tool, when it read any.
 */
export function valueEvidence(value: unknown, param: ToolParameter, text: EvidenceText, rules?: unknown): ValueEvidence {
  if (rules !== undefined && valueMatches(rules, value)) return { score: AGREES_WITH_RULES, how: 'as the rules read it' };
  if (param.default !== undefined && valueMatches(param.default, value)) return { score: DEFAULT, how: 'the schema default' };
  const folded = { intent: foldText(text.intent), context: text.context === undefined ? '' : foldText(text.context) };
  const leaves: unknown[] = [];
  collectLeaves(value, leaves, 0);
  if (leaves.length === 0) return { score: DEFAULT, how: 'empty' };
  let weakest: ValueEvidence = { score: FOUND, how: 'in the intent' };
  for (const leaf of leaves) {
    const one = leafEvidence(leaf, param, folded);
    if (one.score < weakest.score) weakest = one;
    if (weakest.score === 0) break;
  }
  return weakest;
}

function collectLeaves(value: unknown, out: unknown[], depth: number): void {
  if (out.length > MAX_LEAVES) return;
  if (depth > MAX_DEPTH) {
    // Deeper than any call a sentence describes: counted as a guess.
    out.push(Symbol('too deep'));
    return;
  }
  if (Array.isArray(value)) for (const v of value) collectLeaves(v, out, depth + 1);
  else if (value !== null && typeof value === 'object') for (const v of Object.values(value)) collectLeaves(v, out, depth + 1);
  else if (value !== null && value !== undefined) out.push(value);
}

function leafEvidence(leaf: unknown, param: ToolParameter, text: { intent: string; context: string }): ValueEvidence {
  if (typeof leaf === 'boolean') return { score: BOOLEAN, how: 'a yes/no read from the sense' };
  if (typeof leaf === 'number') {
    if (numbersIn(text.intent).includes(leaf)) return { score: FOUND, how: 'in the intent' };
    if (numbersIn(text.context).includes(leaf)) return { score: IN_CONTEXT, how: 'in the conversation' };
    return { score: 0, how: `${leaf} is not in the intent` };
  }
  if (typeof leaf !== 'string') return { score: 0, how: 'not a value the intent can state' };
  const s = foldText(leaf);
  if (s !== '' && containsWords(text.intent, s)) return { score: FOUND, how: 'in the intent' };
  // A number written as a string ("3" for a string parameter) is found like a number.
  if (/^-?\d+(?:\.\d+)?$/.test(s) && numbersIn(text.intent).includes(Number(s))) return { score: FOUND, how: 'in the intent' };
  if (s !== '' && containsWords(text.context, s)) return { score: IN_CONTEXT, how: 'in the conversation' };
  if (param.enum?.some((v) => v === leaf)) return { score: ENUM_CHOICE, how: 'one of its allowed values, not named in the intent' };
  return { score: 0, how: `"${leaf.slice(0, 60)}" is not in the intent` };
}
