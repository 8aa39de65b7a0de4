import { KiwiError } from '../errors.js';
import type { ChatUsage } from '../llm/types.js';
import { budgetOf, type BudgetConfig } from './budget-config.js';
import type { BudgetLedger } from './budget-ledger.js';
import { emptyTotals, firstReached, type BudgetLimits, type BudgetStop } from './budget-types.js';
import { windowStart } from './budget-window.js';
import { overBudgetMessage, retryAfterSeconds, unpricedMessage } from './budget-words.js';
import { FREE, priceFor, spendUsd } from './prices.js';

/**
 * Budgets at work: `admit` refuses a request whose client (or directive run) has already used a
 * budget, before anything goes upstream; the meter it returns charges every turn, tool call and
 * spawn of the request to the ledger, and tells the agent loop when a budget ran out (the loop
 * then starts no further turn). A turn, once started, runs to its end: the overshoot is at most
 * one turn and the tool intents one request may have.
 */

/** A directive being run, whose `<limits>` bound the whole run (all its requests, restarts included). */
export interface DirectiveRun {
  directive: string;
  /** The run's id: its usage is totalled under it in the ledger. */
  run: string;
  limits: BudgetLimits;
  /** When the run began (ms since the epoch), for its `duration`. */
  startedAt: number;
}

export interface AdmitOptions {
  client: string;
  /** The model id sent upstream: its price is looked up. */
  model: string;
  /** An upstream that costs nothing (the offline demo). */
  free?: boolean;
  /** Set when the request runs under a directive. */
  directive?: DirectiveRun;
}

export interface BudgetMeter {
  /** One upstream turn's usage, as the upstream reported it. */
  charge(usage: ChatUsage | undefined): void;
  countToolCall(): void;
  countSpawn(): void;
  /** The budget that ran out, if one did. */
  exhausted(): BudgetStop | undefined;
}

export interface Budgets {
  /** Throws BUDGET_EXCEEDED (429) or, for an unpriced model under a spend budget, POLICY_DENIED. */
  admit(options: AdmitOptions): Promise<BudgetMeter>;
}

export function createBudgets(deps: { config: BudgetConfig; ledger: BudgetLedger; now?: () => number }): Budgets {
  const { config, ledger } = deps;
  const now = deps.now ?? Date.now;
  return {
    async admit(options) {
      const budget = budgetOf(config, options.client);
      const run = options.directive;
      const price = options.free === true ? FREE : priceFor(config.prices, options.model);
      if (price === undefined) {
        const budgeted =
          budget?.limits.spendUsd !== undefined ? `client "${options.client}" has` : run?.limits.spendUsd !== undefined ? `directive ${run.directive} has` : config.requestSpendUsd !== undefined ? 'every request has (limits.max_spend_usd)' : undefined;
        // Spend that cannot be counted could run without bound: refuse rather than guess.
        if (budgeted !== undefined) throw new KiwiError('POLICY_DENIED', unpricedMessage(options.model, budgeted), { details: { model: options.model } });
      }
      const request = emptyTotals();
      const exhausted = (): BudgetStop | undefined => {
        const at = now();
        if (config.requestSpendUsd !== undefined) {
          const hit = firstReached(request, { spendUsd: config.requestSpendUsd });
          if (hit) return { scope: 'request', name: 'request', ...hit };
        }
        if (budget !== undefined) {
          const start = windowStart(at, budget.windowMs);
          const hit = firstReached(ledger.totals({ client: options.client }, start), budget.limits);
          if (hit) return { scope: 'client', name: options.client, ...hit, resetsAt: start + budget.windowMs, window: budget.window, field: budget.field };
        }
        if (run !== undefined) {
          const hit = firstReached(ledger.totals({ run: run.run }, 0), run.limits, at - run.startedAt);
          if (hit) return { scope: 'directive', name: run.directive, ...hit };
        }
        return undefined;
      };
      if (budget !== undefined || run !== undefined) await ledger.refresh();
      const over = exhausted();
      if (over !== undefined) {
        const at = now();
        throw new KiwiError('BUDGET_EXCEEDED', overBudgetMessage(over, at), { details: { budget: over, ...(over.resetsAt === undefined ? {} : { retryAfter: String(retryAfterSeconds(over, at)) }) } });
      }
      const record = (counts: { input?: number; output?: number; usd?: number; toolCalls?: number; spawns?: number; turns?: number }): void => {
        ledger.record({
          at: now(),
          client: options.client,
          model: options.model,
          input: counts.input ?? 0,
          output: counts.output ?? 0,
          ...(counts.usd === undefined && price === undefined ? {} : { usd: counts.usd ?? 0 }),
          toolCalls: counts.toolCalls ?? 0,
          spawns: counts.spawns ?? 0,
          turns: counts.turns ?? 0,
          ...(run === undefined ? {} : { directive: run.directive, run: run.run }),
        });
      };
      return {
        charge(usage) {
          const input = usage?.inputTokens ?? 0;
          const output = usage?.outputTokens ?? 0;
          const usd = price === undefined ? undefined : spendUsd(price, { inputTokens: input, outputTokens: output });
          request.tokens += input + output;
          request.spendUsd += usd ?? 0;
          request.turns++;
          record({ input, output, ...(usd === undefined ? {} : { usd }), turns: 1 });
        },
        countToolCall: () => record({ toolCalls: 1 }),
        countSpawn: () => record({ spawns: 1 }),
        exhausted,
      };
    },
  };
}
