import type { ChatUsage } from '../llm/types.js';
import type { LoopBudget } from './loop-types.js';

/**
 * The loop's budget, each turn's charge also told to `count`: the loop charges every turn however
 * it ends (finished, cut, failed), so what a run used is known even when it never finishes. Without
 * a budget to pass the charges on to, nothing else changes: no budget ever runs out.
 */
export function countingBudget(budget: LoopBudget | undefined, count: (usage: ChatUsage | undefined) => void): LoopBudget {
  return {
    charge(usage) {
      count(usage);
      budget?.charge(usage);
    },
    countToolCall: () => budget?.countToolCall(),
    exhausted: () => budget?.exhausted(),
  };
}
