import path from 'node:path';
import { countsSpend } from '../budgets/budget-config.js';
import { openBudgetLedger, type BudgetLedger } from '../budgets/budget-ledger.js';
import { openSqlBudgetLedger } from '../budgets/sql-budget-ledger.js';
import type { SqlDb } from '../store/sql/sql-db.js';
import type { SharedState } from '../shared-state/shared-state.js';
import { createBudgets, type Budgets } from '../budgets/budget-meter.js';
import { createBudgetUsage, type BudgetUsage } from '../budgets/budget-usage.js';
import { HOUR_MS } from '../budgets/budget-window.js';
import type { GatewayConfig } from './gateway-config.js';

/** Where the ledger of what each client used lives. */
export const BUDGET_STATE_DIR = path.join('.ai', 'state', 'budgets');

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
 * in the Postgres the gateways share (`database`); and what running requests hold of their
 * clients' budgets.
 * Without any, undefined: nothing is metered or written.
 */
export async function openGatewayBudgets(options: { root: string; config: GatewayConfig; database?: SqlDb | undefined; shared: Pick<SharedState, 'budgetHolds'>; log?: (line: string) => void }): Promise<GatewayBudgets | undefined> {
  const { budgets } = options.config;
  const clientBudgets = [...budgets.clients.values(), ...(budgets.default ? [budgets.default] : [])];
  if (budgets.prices.length === 0 && clientBudgets.length === 0 && !countsSpend(budgets)) return undefined;
  const retainMs = Math.max(24 * HOUR_MS, ...clientBudgets.map((b) => b.windowMs));
  const ledger = await openLedger({ ...options, retainMs });
  const free = new Set(options.config.upstreams.filter((u) => u.kind === 'demo').map((u) => u.name));
  // In this process, or in Redis when replicas share them (budget-holds.ts).
  const holds = options.shared.budgetHolds({ ttlMs: options.config.limits.maxDurationMs + HOLD_MARGIN_MS });
  return {
    ...createBudgets({ config: budgets, ledger, holds }),
    usage: createBudgetUsage({ config: budgets, ledger, holds, retainMs }),
    ledgerWhere: options.database === undefined ? path.join(options.root, BUDGET_STATE_DIR) : 'Postgres (DATABASE_URL)',
    isFree: (upstream) => free.has(upstream),
    async settled() {
      await holds.idle();
      await ledger.flush();
    },
    close: () => ledger.close(),
  };
}

function openLedger(options: { root: string; database?: SqlDb | undefined; retainMs: number; log?: (line: string) => void }): Promise<BudgetLedger> {
  const onError = options.log ? { onError: options.log } : {};
  return options.database === undefined
    ? openBudgetLedger({ dir: path.join(options.root, BUDGET_STATE_DIR), retainMs: options.retainMs, ...onError })
    : openSqlBudgetLedger({ db: options.database, retainMs: options.retainMs, ...onError });
}
