/**
 * A tool's id written inside an intent ("help me with the `list_files` functionality") is evidence
 * of which tool is meant, never a call: only the exact-call forms (exact-call.ts) state a call.
 * The mentioned tool is ranked first, scored as the best retrieved candidate, so it wins the tie
 * but brings no confidence of its own: the call it leads to is gated like any call from plain words.
 */
import type { Tool } from '../registry/types.js';
import type { Candidate } from './types.js';

/**
 * The longest tool id the intent writes like an id (in backticks, or with `_`, `.` or an inner
 * capital), so a tool called `search` is not mentioned by every intent that uses the word.
 */
export function mentionedTool(intent: string, tools: ReadonlyMap<string, Tool>): string | undefined {
  let best: string | undefined;
  for (const m of intent.matchAll(/`([A-Za-z0-9_.-]{2,128})`|([A-Za-z0-9_.-]{3,128})/g)) {
    const id = m[1] ?? (m[2] as string).replace(/[.-]+$/, '');
    const idLike = m[1] !== undefined || /[_.]|[a-z][A-Z]/.test(id);
    if (idLike && tools.has(id) && (!best || id.length > best.length)) best = id;
  }
  return best;
}

/**
 * The candidates with the mentioned one first at the best candidate's score (added when retrieval
 * missed it), the rest in their order: the runner-up the confidence compares it with is the best
 * of everything else.
 */
export function mentionFirst(candidates: readonly Candidate[], mentioned: Pick<Candidate, 'tool' | 'item'>): Candidate[] {
  const same = (c: Candidate): boolean => c.tool === mentioned.tool && c.item === mentioned.item;
  const top = candidates[0]?.score ?? 0;
  return [{ ...(candidates.find(same) ?? mentioned), score: top }, ...candidates.filter((c) => !same(c))];
}
