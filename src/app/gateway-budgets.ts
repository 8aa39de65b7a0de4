import { countsSpend } from '../budgets/budget-config.js';
import type { SharedState } from '../shared-state/shared-state.js';
import { createBudgets, type Budgets } from '../budgets/budget-meter.js';
import { createBudgetUsage, type BudgetUsage } from '../budgets/budget-usage.js';
import { HOUR_MS } from '../budgets/budget-window.js';
import type { GatewayConfig } from './gateway-config.js';
import type { StateBackends } from './state-backends.js';

export interface GatewayBudgets extends Budgets {
  /** What clients used and what their budgets leave (the admin API's usage). */
  usage: BudgetUsage;
  /** Where the ledger is, for people: its folder, or Postgres. */
  ledgerWhere: string;
  /** True for an upstream that costs nothing (the offline demo). */
  isFree(upstream: string): boolean;
  /** Resolves once no request holds any budget (each running one ended) and their charges are on disk. */
  settled(): Promise<void>;
  /** Waits until every charge is on disk. */
  close(): Promise<void>;
}

/** How long past the longest request a hold that was never released lasts (budget-holds.ts). */
const HOLD_MARGIN_MS = 60_000;

/**
 * The gateway's budgets, when its config has any (prices, client budgets, `limits.max_spend_usd`):
 * the ledger under `.ai/state/budgets/`, read back at start so that a restart resets nothing, or
 * in the Postgres the gateways share (state-backends.ts chooses); and what running requests hold
 * of their clients' budgets.
 * Without any, undefined: nothing is metered or written.
 */
export async function openGatewayBudgets(options: { config: GatewayConfig; state: Pick<StateBackends, 'budgetLedger' | 'where'>; shared: Pick<SharedState, 'budgetHolds'>; log?: (line: string) => void }): Promise<GatewayBudgets | undefined> {
  const { budgets } = options.config;
  const clientBudgets = [...budgets.clients.values(), ...(budgets.default ? [budgets.default] : [])];
  if (budgets.prices.length === 0 && clientBudgets.length === 0 && !countsSpend(budgets)) return undefined;
  const retainMs = Math.max(24 * HOUR_MS, ...clientBudgets.map((b) => b.windowMs));
  const ledger = await options.state.budgetLedger({ retainMs, ...(options.log ? { onError: options.log } : {}) });
  const free = new Set(options.config.upstreams.filter((u) => u.kind === 'demo').map((u) => u.name));
  // In this process, or in Redis when replicas share them (budget-holds.ts).
  const holds = options.shared.budgetHolds({ ttlMs: options.config.limits.maxDurationMs + HOLD_MARGIN_MS });
  return {
    ...createBudgets({ config: budgets, ledger, holds }),
    usage: createBudgetUsage({ config: budgets, ledger, holds, retainMs }),
    ledgerWhere: options.state.where.budgets,
    isFree: (upstream) => free.has(upstream),
    async settled() {
      await holds.idle();
      await ledger.flush();
    },
    close: () => ledger.close(),
  };
}
