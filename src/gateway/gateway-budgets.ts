import path from 'node:path';
import { countsSpend } from '../budgets/budget-config.js';
import { openBudgetLedger } from '../budgets/budget-ledger.js';
import { createBudgets, type Budgets } from '../budgets/budget-meter.js';
import { HOUR_MS } from '../budgets/budget-window.js';
import type { GatewayConfig } from './gateway-config.js';

/** Where the ledger of what each client used lives. */
export const BUDGET_STATE_DIR = path.join('.ai', 'state', 'budgets');

export interface GatewayBudgets extends Budgets {
  /** True for an upstream that costs nothing (the offline demo). */
  isFree(upstream: string): boolean;
  /** Waits until every charge is on disk. */
  close(): Promise<void>;
}

/**
 * The gateway's budgets, when its config has any (prices, client budgets, `limits.max_spend_usd`):
 * the ledger under `.ai/state/budgets/`, read back at start so that a restart resets nothing.
 * Without any, undefined: nothing is metered or written.
 */
export async function openGatewayBudgets(options: { root: string; config: GatewayConfig; log?: (line: string) => void }): Promise<GatewayBudgets | undefined> {
  const { budgets } = options.config;
  const clientBudgets = [...budgets.clients.values(), ...(budgets.default ? [budgets.default] : [])];
  if (budgets.prices.length === 0 && clientBudgets.length === 0 && !countsSpend(budgets)) return undefined;
  const ledger = await openBudgetLedger({
    dir: path.join(options.root, BUDGET_STATE_DIR),
    retainMs: Math.max(24 * HOUR_MS, ...clientBudgets.map((b) => b.windowMs)),
    ...(options.log ? { onError: options.log } : {}),
  });
  const free = new Set(options.config.upstreams.filter((u) => u.kind === 'demo').map((u) => u.name));
  return { ...createBudgets({ config: budgets, ledger }), isFree: (upstream) => free.has(upstream), close: () => ledger.close() };
}
