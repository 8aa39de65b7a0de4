/**
 * The kind of item an intent asks for in so many words: "load knowledge about rate limits",
 * "run the deploy checklist", "follow the release process". Such a word is a prior, not evidence
 * of which item: it picks the best candidate of that kind, and the confidence still comes from the
 * scores, so a better-scoring tool lowers it (the agent is asked) rather than being passed over.
 */
import type { Candidate, ItemKind } from './types.js';

const KNOWLEDGE = [/\bknowledge\b/i, /\bwhat (?:do|does) (?:we|the project|this project) know about\b/i];
const DIRECTIVE = [
  /\bdirectives?\b/i,
  /\b(?:checklist|playbook|runbook)s?\b/i,
  /\b(?:run|follow|execute|start|do|go through|carry out)\s+(?:the|our|a|an|this|that)\s+(?:[\p{L}\p{N}_-]+\s+){0,4}?(?:process|procedure|workflow)\b/iu,
];

/** The kind the intent names; undefined when it names none, or both. */
export function itemCue(intent: string): ItemKind | undefined {
  const knowledge = KNOWLEDGE.some((re) => re.test(intent));
  const directive = DIRECTIVE.some((re) => re.test(intent));
  return knowledge === directive ? undefined : knowledge ? 'knowledge' : 'directive';
}

/**
 * The candidates with the best one of the cued kind first and the rest in their order, so the
 * runner-up the confidence compares it with is the best of everything else. Unchanged when the
 * intent names no kind, or no candidate is of it.
 */
export function preferCuedKind(intent: string, candidates: Candidate[]): Candidate[] {
  const cue = itemCue(intent);
  if (cue === undefined) return candidates;
  const at = candidates.findIndex((c) => c.item === cue);
  if (at <= 0) return candidates;
  return [candidates[at] as Candidate, ...candidates.slice(0, at), ...candidates.slice(at + 1)];
}
