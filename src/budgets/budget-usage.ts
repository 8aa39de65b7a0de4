import { KiwiError } from '../base/errors.js';
import { budgetOf, DEFAULT_WINDOW, type BudgetConfig } from './budget-config.js';
import { clientHoldKey, type BudgetHolds, type HeldAmount } from './budget-holds.js';
import type { BudgetLedger } from './budget-ledger.js';
import { firstReached, type BudgetLimits, type BudgetResource, type BudgetTotals } from './budget-types.js';
import { HOUR_MS, parseWindow, windowStart } from './budget-window.js';

/**
 * What clients used and what their budgets leave, for the people who run the gateway (the admin
 * API's usage): the ledger's totals over a window, what the client's running requests hold now,
 * and its budget over the budget's own window. A new request is admitted while every limited
 * amount, less what is held, is above zero (budget-meter.ts): `left` says how far that is.
 */

export interface ClientUsage {
  client: string;
  /** The window the totals are over (`1d`), fixed and aligned like a budget's (budget-window.ts). */
  window: string;
  since: number;
  used: BudgetTotals;
  /** What the client's running requests hold now (budget-holds.ts), on every gateway sharing the holds. */
  held: HeldAmount;
  /** Absent: the client has no budget (none of its own, and no `budgets.default`). */
  budget?: BudgetStanding;
}

export interface BudgetStanding {
  /** Where it is configured: `budgets.clients.ci` or `budgets.default`. */
  field: string;
  window: string;
  since: number;
  resetsAt: number;
  limits: BudgetLimits;
  /** The totals over the budget's window (the same as `ClientUsage.used` when the windows are). */
  used: BudgetTotals;
  /** What a new request still has of each limited amount: the limit, less what is used and held (never below 0). */
  left: BudgetLimits;
  /** The first limit the totals reached: new requests are refused (429) until `resetsAt`. */
  reached?: { resource: BudgetResource; used: number; limit: number };
}

export interface BudgetUsage {
  /** How far back the ledger keeps totals: no window may be longer. */
  retainMs: number;
  /** The clients with a budget of their own, and those the ledger saw from `since` on. */
  clients(since: number): Promise<string[]>;
  /** `window`: as budgets write it (`1h`, `7d`); default the client's budget window, else 1d. */
  of(client: string, window?: string): Promise<ClientUsage>;
  /** The window's length; INVALID_INPUT, saying what may be asked, when it is not one `of` can total. */
  windowMs(window: string): number;
}

export function createBudgetUsage(deps: { config: BudgetConfig; ledger: BudgetLedger; holds: BudgetHolds; retainMs: number; now?: () => number }): BudgetUsage {
  const { config, ledger, holds, retainMs } = deps;
  const now = deps.now ?? Date.now;
  return {
    retainMs,
    windowMs: (window) => usageWindowMs(window, retainMs),
    async clients(since) {
      await ledger.refresh();
      return [...new Set([...config.clients.keys(), ...(await ledger.clients(since))])].sort();
    },
    async of(client, asked) {
      const budget = budgetOf(config, client);
      const window = asked ?? budget?.window ?? DEFAULT_WINDOW;
      const ms = usageWindowMs(window, retainMs);
      await ledger.refresh([{ client }]);
      const at = now();
      const since = windowStart(at, ms);
      const used = ledger.totals({ client }, since);
      const held = await holds.held(clientHoldKey(client));
      if (budget === undefined) return { client, window, since, used, held };
      const budgetSince = windowStart(at, budget.windowMs);
      const budgetUsed = budget.windowMs === ms ? used : ledger.totals({ client }, budgetSince);
      const { limits } = budget;
      const left: BudgetLimits = {
        ...(limits.spendUsd === undefined ? {} : { spendUsd: Math.max(0, limits.spendUsd - budgetUsed.spendUsd - held.spendUsd) }),
        ...(limits.tokens === undefined ? {} : { tokens: Math.max(0, limits.tokens - budgetUsed.tokens - held.tokens) }),
        ...(limits.toolCalls === undefined ? {} : { toolCalls: Math.max(0, limits.toolCalls - budgetUsed.toolCalls) }),
      };
      const reached = firstReached(budgetUsed, limits);
      return {
        client,
        window,
        since,
        used,
        held,
        budget: { field: budget.field, window: budget.window, since: budgetSince, resetsAt: budgetSince + budget.windowMs, limits, used: budgetUsed, left, ...(reached ? { reached } : {}) },
      };
    },
  };
}

/** The window's length, checked against what the ledger keeps. */
function usageWindowMs(window: string, retainMs: number): number {
  const ms = parseWindow(window);
  if (ms === undefined) throw new KiwiError('INVALID_INPUT', `window ${JSON.stringify(window.slice(0, 40))} is not a number of hours or days up to 31 days, e.g. 1h, 12h, 1d or 7d`);
  if (ms > retainMs) {
    throw new KiwiError('INVALID_INPUT', `window ${window} is longer than the ledger keeps (${retainMs / HOUR_MS}h: the longest budget window, at least a day); ask for a shorter one, or give a budget that window to keep more`);
  }
  return ms;
}
