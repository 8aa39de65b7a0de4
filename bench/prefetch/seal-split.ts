import type { GoldCall } from '../../src/datasets/case-file.js';

/**
 * Splits a Seal-Tools multi-call request ("… . Then, … . Finally, …") into one sub-request per
 * gold call, for the prefetch traces. Conservative: a case whose split does not give exactly one
 * self-contained sub-request per gold call is left out rather than guessed at.
 */

export interface SubRequest {
  /** The step as the user wrote it, connective ("Then, ") removed: what goes inside [TOOL: …]. */
  text: string;
  /** The sentence that says what to do (for the agent's announcement). */
  action: string;
  gold: GoldCall;
}

export type SplitResult = { ok: true; steps: SubRequest[] } | { ok: false; reason: string };

// Sentence ends: . ! ? (maybe closing quote) then space and a capital or quote; not after a short abbreviation.
const SENTENCE_END = /(?<=[.!?]["')]?)\s+(?=["'A-Z])/g;
const ABBREVIATION = /(?:\b[A-Z]|\b(?:Mr|Mrs|Ms|Dr|St|vs|No|etc|e\.g|i\.e|Inc|Ltd|Jr|Sr|U\.S|approx))\.$/;

/** Words that open a new step when a sentence starts with them. */
const STEP_START =
  /^(?:and\s+)?(?:then|finally|lastly|last|next|after\s+that|afterwards?|subsequently|additionally|also|moreover|furthermore|in\s+addition(?:\s+to\s+that)?|besides(?:\s+that)?|apart\s+from\s+that|on\s+top\s+of\s+that|secondly|thirdly|second|third|meanwhile|once\s+[^,.]{1,80}|after\s+[^,.]{1,80}|following\s+that|as\s+a\s+next\s+step)\b\s*,?\s*/i;
/** A sentence where the user asks for one more thing ("I also need …", "Can you also …"). */
const ALSO_START = /^(?:(?:i|we)\s+(?:would\s+|'d\s+|will\s+)?also\b|(?:can|could|would)\s+you\s+also\b|please\s+also\b)/i;
/** Courtesy that asks for nothing. */
const THANKS = /^(?:thanks?(?:\s+you)?(?:\s+(?:so|very)\s+much)?(?:\s+in\s+advance)?|(?:i\s+)?appreciate\s+(?:it|your\s+help)|much\s+appreciated)[.!]?$/i;
/** "First, …" opens the first step: the preamble before it belongs to that step. */
const FIRST_START = /^(?:first(?:ly)?|first\s+of\s+all|to\s+(?:start|begin)(?:\s+with)?)\b\s*,?\s*/i;

/** Inside a sentence, ", and finally, …" or "; then …" also starts a step. */
const INNER_STEP = /(?:,\s+and|;)\s+(?=(?:then|finally|lastly|afterwards|after\s+that)\b)/gi;

export function splitSentences(text: string): string[] {
  return wholeSentences(text).flatMap((s) => s.split(INNER_STEP));
}

function wholeSentences(text: string): string[] {
  const out: string[] = [];
  let current = '';
  for (const part of text.trim().split(SENTENCE_END)) {
    current = current ? `${current} ${part}` : part;
    if (!ABBREVIATION.test(current)) {
      out.push(current);
      current = '';
    }
  }
  if (current) out.push(current);
  return out;
}

/** Removes the connective a step opens with and capitalises what is left. */
export function stripConnective(sentence: string): string {
  const rest = sentence.replace(STEP_START, '').replace(FIRST_START, '');
  return rest.charAt(0).toUpperCase() + rest.slice(1);
}

function opensStep(sentence: string): boolean {
  return STEP_START.test(sentence) || ALSO_START.test(sentence);
}

/** Groups sentences into steps: a new step starts at each connective. */
export function groupSteps(request: string): string[][] {
  const steps: string[][] = [];
  for (const sentence of splitSentences(request)) {
    if (THANKS.test(sentence)) continue;
    const last = steps.at(-1);
    if (!last || (opensStep(sentence) && !FIRST_START.test(sentence))) steps.push([sentence]);
    else last.push(sentence);
  }
  return steps;
}

/** The sentence of a step that asks for something: skips a preamble ("I need some help with …"). */
function actionSentence(sentences: string[]): string {
  const asks = sentences.find((s, i) => (i === 0 && opensStep(s)) || FIRST_START.test(s) || /^(?:please|kindly|can\s+you|could\s+you|would\s+you)\b/i.test(s) || IMPERATIVE.test(s));
  return stripConnective(asks ?? (sentences[0] as string));
}

const IMPERATIVE = /^(?:get|check|find|search|list|show|tell|give|provide|retrieve|fetch|calculate|compute|analy[sz]e|create|add|update|delete|remove|send|book|schedule|set|make|generate|translate|convert|play|track|monitor|validate|verify|evaluate|assess|estimate|predict|recommend|suggest|look|perform|run|start|stop|submit|register|record|log|grant|revoke|cancel|upload|download|measure|compare|identify|determine|obtain|query|lookup|look\s+up)\b/i;

/**
 * One sub-request per gold call, or why not: the steps must match the gold calls in number and
 * in order (judged by the argument values and tool-name words each step holds), and every
 * argument value that appears in the request must appear in its own step, so that each intent
 * is self-contained.
 */
export function splitRequest(request: string, calls: readonly GoldCall[]): SplitResult {
  const steps = groupSteps(request);
  if (steps.length !== calls.length) return { ok: false, reason: `${steps.length} steps for ${calls.length} calls` };
  const texts = steps.map((s) => s.map(stripConnective).join(' '));
  // Seal-Tools lists a few calls out of text order; pairing them by position would be wrong, and guessing a new order is too.
  const order = bestOrder(texts, calls);
  if (order.some((c, s) => c !== s)) return { ok: false, reason: 'the gold calls are not in the order of the text' };
  for (const [i, text] of texts.entries()) {
    const gold = calls[i] as GoldCall;
    const missing = quotedValues(gold).filter((v) => mentions(request, v) && !mentions(text, v));
    if (missing.length > 0) return { ok: false, reason: `step ${i + 1} leaves out ${missing.join(', ')}` };
  }
  return { ok: true, steps: texts.map((text, i) => ({ text, action: actionSentence(steps[i] as string[]), gold: calls[i] as GoldCall })) };
}

/** The permutation (step -> call) that puts the most argument values (and tool-name words) in their steps; the text order wins ties. */
function bestOrder(texts: string[], calls: readonly GoldCall[]): number[] {
  const score = texts.map((t) => calls.map((c) => quotedValues(c).filter((v) => mentions(t, v)).length * 10 + nameWords(c.name).filter((w) => t.toLowerCase().includes(w)).length));
  let best: { order: number[]; total: number; moved: number } | null = null;
  for (const order of permutations(calls.length)) {
    const total = order.reduce((sum, c, s) => sum + (score[s]?.[c] ?? 0), 0);
    const moved = order.filter((c, s) => c !== s).length;
    if (!best || total > best.total || (total === best.total && moved < best.moved)) best = { order, total, moved };
  }
  return best?.order ?? [...calls.keys()];
}

function* permutations(n: number): Generator<number[]> {
  if (n > 6) {
    yield [...Array(n).keys()];
    return;
  }
  const rec = function* (prefix: number[], rest: number[]): Generator<number[]> {
    if (rest.length === 0) yield prefix;
    for (const [i, x] of rest.entries()) yield* rec([...prefix, x], [...rest.slice(0, i), ...rest.slice(i + 1)]);
  };
  yield* rec([], [...Array(n).keys()]);
}

/** String and number argument values worth finding in text (one per parameter: the first that is). */
export function quotedValues(call: GoldCall): string[] {
  const out: string[] = [];
  for (const values of Object.values(call.arguments ?? {})) {
    const v = values.find((x) => (typeof x === 'string' && x.trim().length >= 2 && !/^API_call_\d+$/.test(x)) || typeof x === 'number');
    if (v !== undefined) out.push(String(v).trim());
  }
  return out;
}

/** Whole-word, case-insensitive. */
export function mentions(text: string, value: string): boolean {
  const escaped = value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  return new RegExp(`(?<![A-Za-z0-9])${escaped}(?![A-Za-z0-9])`, 'i').test(text);
}

/** camelCase / snake_case words of a tool name, 4+ letters, cut to a stem of 5. */
function nameWords(name: string): string[] {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .split(/[\s_.-]+/)
    .map((w) => w.toLowerCase())
    .filter((w) => w.length >= 4 && !['get', 'info', 'data'].includes(w))
    .map((w) => w.slice(0, 5));
}
