/**
 * What an ask-back offers the caller: the closest candidates it may run, and nothing it may not.
 * A denied tool is never offered, as a menu entry or an example call: an agent copies what it is
 * shown. When the best fit itself is denied, what the resolver said about it (its reason, its
 * missing and found values) goes too, so the rest of the answer does not point at it. A malformed
 * or unknown exact call (`stop: exact_call`) is the exception: its reason speaks of the id the agent
 * wrote itself, not of the best fit, and stays.
 */
import type { Candidate, UnresolvedStop } from './types.js';

/** What an unresolved intent tells the caller (a resolution's fields of the same names). */
export interface AskBack {
  candidates: Candidate[];
  reason: string;
  missing: string[];
  found?: Record<string, unknown>;
  stop?: UnresolvedStop;
}

export const BEST_FIT_DENIED = "the tool that fits this intent best is not one this caller's policy lets it run, so nothing ran";
/** A weak match (`stop: threshold`) whose first candidate is denied: nothing fits, so no best fit is spoken of. */
export const NONE_FITS = 'no tool this caller may run fits this intent well enough; rephrase the intent or name the tool';

export function askBackFor(resolution: AskBack, mayRun: (candidate: Candidate) => boolean): AskBack {
  const candidates = resolution.candidates.filter((c) => mayRun(c));
  const top = resolution.candidates[0];
  if (top !== undefined && candidates[0] !== top && resolution.stop !== 'exact_call') return { candidates, reason: resolution.stop === 'threshold' ? NONE_FITS : BEST_FIT_DENIED, missing: [] };
  return { candidates, reason: resolution.reason, missing: resolution.missing, ...(resolution.found ? { found: resolution.found } : {}) };
}
