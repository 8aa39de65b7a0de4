/**
 * The first candidate may be a tool the intent cannot fill (a required value it never states)
 * while one just below it takes every value the intent gives: "book a table for 4 at Nopa at
 * 7pm" ranks `find_restaurants` over `reserve_table`. The one the intent fills is then the
 * better reading. Only close runners-up are tried, only with values read from the intent with
 * evidence, and the call passes the tool's schema. A tool with no required parameter (or only
 * ones with defaults) fills any intent, so it proves nothing and is never preferred this way.
 */
import { isKiwiError } from '../base/errors.js';
import { validateArgs } from '../executor/validate-args.js';
import type { Tool } from '../registry/types.js';
import type { FilledArguments } from './fill-args.js';
import { sameStem, splitName, stem, STOPWORDS, tokenize } from './text-words.js';
import type { Candidate } from './types.js';

/** Runners-up tried after the first: the candidates a reader of the menu would weigh. */
export const FILLABLE_RUNNERS_UP = 4;
/** How far below the first's fused score a runner-up may stand: further down, retrieval knows better. */
export const FILLABLE_MAX_GAP = 0.08;
/** The least sure value of the runner-up's call: every required value read with this much evidence. */
export const FILLABLE_MIN_CERTAINTY = 0.6;

export interface FillableChoice {
  candidate: Candidate;
  tool: Tool;
  filled: FilledArguments;
  /** Its rank among the candidates, from 1. */
  rank: number;
}

export interface FillableSearch {
  candidates: readonly Candidate[];
  /** The tool, directive or entry a candidate names, as a tool. */
  targetOf(candidate: Candidate): Tool | undefined;
  /** The rules' reading of the intent for a tool (fill-args.ts). */
  fill(tool: Tool): FilledArguments;
  /** Below this fused score a candidate does not fit at all (`threshold`). */
  threshold: number;
  intent: string;
}

/** The closest runner-up whose whole call the intent fills validly, or undefined. */
export function fillableRunnerUp(s: FillableSearch): FillableChoice | undefined {
  const first = s.candidates[0];
  if (first === undefined) return undefined;
  for (const [i, candidate] of s.candidates.slice(1, 1 + FILLABLE_RUNNERS_UP).entries()) {
    if (first.score - candidate.score > FILLABLE_MAX_GAP || candidate.score < s.threshold) break;
    // Directives run threads and knowledge needs no values: neither is chosen for the values it takes.
    if (candidate.item !== undefined) continue;
    const tool = s.targetOf(candidate);
    if (tool === undefined || !tool.parameters.some((p) => p.required && p.default === undefined)) continue;
    if (namesFirstOnly(s.intent, first.tool, candidate.tool)) continue;
    const filled = s.fill(tool);
    if (filled.missing.length > 0 || filled.confidence < FILLABLE_MIN_CERTAINTY || !schemaValid(tool, filled.arguments)) continue;
    return { candidate, tool, filled, rank: i + 2 };
  }
  return undefined;
}

/**
 * Whether the intent writes a word of the first's name that the runner-up's lacks ("renew" in
 * "renew my policy" for `renewPolicy` over `getPolicy`): it asked for what the first does, and a
 * value it left out does not make it ask for something else.
 */
function namesFirstOnly(intent: string, first: string, runnerUp: string): boolean {
  const words = (id: string): string[] => splitName(id).filter((w) => w.length >= 3 && !STOPWORDS.has(w)).map(stem);
  const other = words(runnerUp);
  const own = words(first).filter((w) => !other.some((o) => sameStem(o, w)));
  const said = tokenize(intent).map((t) => t.stem);
  return own.some((w) => said.some((t) => sameStem(t, w)));
}

function schemaValid(tool: Tool, args: Record<string, unknown>): boolean {
  try {
    validateArgs(tool, args);
    return true;
  } catch (error) {
    if (isKiwiError(error, 'INVALID_INPUT')) return false;
    throw error;
  }
}
