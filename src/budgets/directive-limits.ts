import type { DirectiveLimits } from '../registry/types.js';
import type { BudgetLimits } from './budget-types.js';

/**
 * A directive's `<limits>` (either form: attributes, or Kiwi's child elements) as the budget of
 * one run of it. `duration` is written in seconds, `spend` in US dollars. `<limits>` has no tool
 * call count: a run's tool calls are bounded per request (`limits.max_tool_calls`) and by its client's budget.
 */
export function directiveBudgetLimits(limits: DirectiveLimits): BudgetLimits {
  return {
    ...(limits.tokens === undefined ? {} : { tokens: limits.tokens }),
    ...(limits.spend === undefined ? {} : { spendUsd: limits.spend }),
    ...(limits.spawns === undefined ? {} : { spawns: limits.spawns }),
    ...(limits.turns === undefined ? {} : { turns: limits.turns }),
    ...(limits.duration === undefined ? {} : { durationMs: Math.round(limits.duration * 1000) }),
  };
}
