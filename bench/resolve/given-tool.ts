/**
 * Call accuracy with the right tool given: for every case with exactly one gold call whose tool
 * is in the catalog, the rule filler is handed that tool and its arguments are scored by
 * shared/bench/FORMAT.md's call-accuracy rule. It separates what filling loses from what ranking
 * loses: the resolver's full-call accuracy can be no better than this.
 */
import type { Tool } from '../../src/registry/types.js';
import type { BenchCase } from '../../src/datasets/case-file.js';
import { fillArguments, type FilledArguments } from '../../src/resolver/fill-args.js';
import { callMatches } from '../../src/resolver/score-call.js';
import { round } from '../stats.js';

export interface GivenToolOutcome {
  c: BenchCase;
  tool: Tool;
  gold: Record<string, readonly unknown[]>;
  filled: FilledArguments;
  ok: boolean;
}

export function givenToolOutcomes(cases: readonly BenchCase[], tools: ReadonlyMap<string, Tool>): { outcomes: GivenToolOutcome[]; goldToolMissing: number } {
  const outcomes: GivenToolOutcome[] = [];
  let goldToolMissing = 0;
  for (const c of cases) {
    const gold = c.calls.length === 1 ? c.calls[0] : undefined;
    if (!gold || gold.arguments === null) continue;
    const tool = tools.get(gold.name);
    if (!tool) {
      goldToolMissing++;
      continue;
    }
    const filled = fillArguments(c.intent, tool);
    const ok = callMatches(gold as { name: string; arguments: Record<string, unknown[]> }, { tool: tool.id, arguments: filled.arguments }, { schema: tool.parameters.map((p) => p.name) });
    outcomes.push({ c, tool, gold: gold.arguments, filled, ok });
  }
  return { outcomes, goldToolMissing };
}

/** The share of outcomes fully right, and how many there were; null with none. */
export function givenToolAccuracy(outcomes: readonly GivenToolOutcome[]): { n: number; accuracy: number | null } {
  return { n: outcomes.length, accuracy: outcomes.length === 0 ? null : round(outcomes.filter((o) => o.ok).length / outcomes.length) };
}
