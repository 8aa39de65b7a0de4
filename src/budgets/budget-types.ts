import type { ChatUsage } from '../llm/types.js';

/**
 * What a budget counts and what the gateway says when one runs out. Budgets are kept per client
 * key (over a window), per request, and per directive run; all are charged through one ledger.
 */

export type BudgetResource = 'tokens' | 'spend' | 'tool_calls' | 'spawns' | 'duration' | 'turns';

/** Limits of one budget; an absent field is not limited. Spend is in US dollars. */
export interface BudgetLimits {
  tokens?: number;
  spendUsd?: number;
  toolCalls?: number;
  spawns?: number;
  durationMs?: number;
  turns?: number;
}

/** A budget that ran out: what, whose, how much was used of how much, and when it starts afresh. */
export interface BudgetStop {
  scope: 'client' | 'request' | 'directive';
  /** The client's name, `request`, or the directive's name. */
  name: string;
  resource: BudgetResource;
  used: number;
  limit: number;
  /** A client's window: when it starts afresh (ms since the epoch). */
  resetsAt?: number;
  /** A client's window as configured (`1d`). */
  window?: string;
  /** A client's budget in the config: `budgets.clients.ci` or `budgets.default`. */
  field?: string;
  /** How much of `used` was estimated from the text (token-estimate.ts), when some was. */
  estimated?: number;
  /** A new request refused because requests still running hold this much of the budget (budget-holds.ts). */
  held?: number;
}

/**
 * What a ledger adds up for one key. `spendUsd` counts priced tokens only; `unpricedTokens` the
 * rest. `estimatedTokens` and `estimatedUsd` are the parts of `tokens` and `spendUsd` that were
 * estimated from the text, because the upstream never said (token-estimate.ts).
 */
export interface BudgetTotals {
  tokens: number;
  spendUsd: number;
  unpricedTokens: number;
  estimatedTokens: number;
  estimatedUsd: number;
  toolCalls: number;
  spawns: number;
  turns: number;
}

export const emptyTotals = (): BudgetTotals => ({ tokens: 0, spendUsd: 0, unpricedTokens: 0, estimatedTokens: 0, estimatedUsd: 0, toolCalls: 0, spawns: 0, turns: 0 });

/** Adds `more` into `into`, field by field; returns `into`. */
export function addTotals(into: BudgetTotals, more: BudgetTotals): BudgetTotals {
  for (const k of Object.keys(into) as (keyof BudgetTotals)[]) into[k] += more[k];
  return into;
}

/** The first limit of `limits` that `totals` reached (the order is the one people read: money first). */
export function firstReached(totals: BudgetTotals, limits: BudgetLimits, elapsedMs = 0): { resource: BudgetResource; used: number; limit: number } | undefined {
  const checks: [BudgetResource, number, number | undefined][] = [
    ['spend', totals.spendUsd, limits.spendUsd],
    ['tokens', totals.tokens, limits.tokens],
    ['tool_calls', totals.toolCalls, limits.toolCalls],
    ['spawns', totals.spawns, limits.spawns],
    ['turns', totals.turns, limits.turns],
    ['duration', elapsedMs, limits.durationMs],
  ];
  for (const [resource, used, limit] of checks) {
    if (limit === undefined) continue;
    // A spawn limit is how many a run may start: reaching it stops the next spawn, not the run.
    if (resource === 'spawns' ? used > limit : used >= limit) return { resource, used, limit };
  }
  return undefined;
}

/**
 * What a run (the agent loop, a thread) asks of the budgets: each turn's usage is charged (a cut
 * turn's too, estimated: `usage.estimated`); after a turn, whether one ran out.
 */
export interface RunBudget {
  charge(usage: ChatUsage | undefined): void;
  /** Each call the loop makes counts toward a tool-call budget. */
  countToolCall(): void;
  exhausted(): BudgetStop | undefined;
}
