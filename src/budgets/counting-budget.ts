import type { ChatUsage } from '../llm/types.js';
import type { RunBudget } from './budget-types.js';

/**
 * A run's budget, each turn's charge also told to `count`: the loop charges every turn however
 * it ends (finished, cut, failed), so what a run used is known even when it never finishes. Without
 * a budget to pass the charges on to, nothing else changes: no budget ever runs out.
 */
export function countingBudget(budget: RunBudget | undefined, count: (usage: ChatUsage | undefined) => void): RunBudget {
  return {
    charge(usage) {
      count(usage);
      budget?.charge(usage);
    },
    countToolCall: () => budget?.countToolCall(),
    exhausted: () => budget?.exhausted(),
  };
}
