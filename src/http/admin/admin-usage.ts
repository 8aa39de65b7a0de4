import type { Hono } from 'hono';
import type { BudgetConfig } from '../../budgets/budget-config.js';
import type { BudgetLimits, BudgetTotals } from '../../budgets/budget-types.js';
import type { BudgetUsage, ClientUsage } from '../../budgets/budget-usage.js';
import { CLIENT_NAME } from '../../clients/key-store.js';
import { KiwiError } from '../../base/errors.js';
import { ADMIN_PREFIX, type AdminRoute } from './admin-route.js';

/**
 * What clients used and what their budgets leave: per client, the ledger's totals over a window
 * (upstream turns, their tokens and spend, tool calls, spawns: the ledger counts turns, not
 * requests), what its running requests hold now, and its budget with what is left of it. A
 * gateway whose config has no prices, budgets or `limits.max_spend_usd` meters nothing and keeps
 * no ledger, and says so; one with prices alone counts use without budgets.
 */

export interface AdminUsage {
  /** Absent when nothing is metered. */
  budgets?: { usage: BudgetUsage; config: BudgetConfig; ledgerWhere: string };
  /** Where running requests' holds are counted: "this process", or the Redis that replicas share. */
  holdsWhere: string;
  /** The clients of the active keys: listed before they have used anything. */
  keyClients(): Promise<string[]>;
}

/** Each client listed costs a look at the ledger (a query, in Postgres). */
const MAX_CLIENTS = 100;

const NOT_METERED = 'nothing is metered: .ai/config/gateway.yaml has no prices, budgets or limits.max_spend_usd, so the gateway keeps no ledger; add prices: (and budgets:) to count what clients use';

export function mountAdminUsage(app: Hono, route: AdminRoute, deps: AdminUsage): void {
  app.get(
    `${ADMIN_PREFIX}/usage`,
    route('usage', async (c) => {
      const client = orUndefined(c.req.query('client'));
      if (client !== undefined && !CLIENT_NAME.test(client)) throw new KiwiError('INVALID_INPUT', `client must be a client's name (1 to 64 letters, digits, "_", "." or "-"), as GET ${ADMIN_PREFIX}/keys shows it`);
      const window = orUndefined(c.req.query('window'));
      const metered = deps.budgets;
      if (metered === undefined) return c.json({ budgets: 'none configured', metered: false, note: NOT_METERED, clients: [] });
      const { usage, config } = metered;
      if (window !== undefined) usage.windowMs(window);
      const budgeted = config.default !== undefined || config.clients.size > 0;
      const names = client !== undefined ? [client] : [...new Set([...(await usage.clients(Date.now() - usage.retainMs)), ...(await deps.keyClients())])].sort();
      const clients: Record<string, unknown>[] = [];
      for (const name of names.slice(0, MAX_CLIENTS)) clients.push(clientView(await usage.of(name, window)));
      return c.json({
        budgets: budgeted ? 'configured' : 'none configured',
        metered: true,
        ledger: metered.ledgerWhere,
        held_in: deps.holdsWhere,
        ...(config.requestSpendUsd === undefined ? {} : { request_spend_usd: config.requestSpendUsd }),
        ...(budgeted ? {} : { note: 'use is counted (the config has prices or limits.max_spend_usd) but no client has a budget; add budgets: to .ai/config/gateway.yaml to limit it' }),
        clients,
        more: names.length > MAX_CLIENTS,
      });
    }),
  );
}

/** An empty query parameter is one not given. */
function orUndefined(value: string | undefined): string | undefined {
  return value === '' ? undefined : value;
}

function clientView(u: ClientUsage): Record<string, unknown> {
  const b = u.budget;
  return {
    client: u.client,
    window: u.window,
    since: new Date(u.since).toISOString(),
    used: totalsView(u.used),
    held: { tokens: u.held.tokens, spend_usd: usd(u.held.spendUsd) },
    budget:
      b === undefined
        ? null
        : {
            field: b.field,
            window: b.window,
            since: new Date(b.since).toISOString(),
            resets_at: new Date(b.resetsAt).toISOString(),
            limits: limitsView(b.limits),
            used: { spend_usd: usd(b.used.spendUsd), tokens: b.used.tokens, tool_calls: b.used.toolCalls },
            left: limitsView(b.left),
            reached: b.reached ?? null,
          },
  };
}

function totalsView(t: BudgetTotals): Record<string, number> {
  return { spend_usd: usd(t.spendUsd), tokens: t.tokens, unpriced_tokens: t.unpricedTokens, estimated_tokens: t.estimatedTokens, estimated_usd: usd(t.estimatedUsd), turns: t.turns, tool_calls: t.toolCalls, spawns: t.spawns };
}

function limitsView(l: BudgetLimits): Record<string, number> {
  return { ...(l.spendUsd === undefined ? {} : { spend_usd: usd(l.spendUsd) }), ...(l.tokens === undefined ? {} : { tokens: l.tokens }), ...(l.toolCalls === undefined ? {} : { tool_calls: l.toolCalls }) };
}

/** Dollars to the millionth: sums of per-token prices carry float noise below that. */
function usd(n: number): number {
  return Math.round(n * 1e6) / 1e6;
}
