import { z } from 'zod';
import { CLIENT_NAME } from '../clients/key-store.js';
import type { BudgetLimits } from './budget-types.js';
import { parseWindow, WINDOW, windowMs } from './budget-window.js';
import type { PriceTable } from './prices.js';

/**
 * `prices:` and `budgets:` of `.ai/config/gateway.yaml` (checked with the rest of the file in
 * gateway-config.ts). Prices are US dollars per million tokens by model id or glob; a client's
 * budget is counted over a fixed window, and a client without an entry of its own has `default`.
 */

export interface ClientBudget {
  limits: BudgetLimits;
  /** As written (`1d`), for people. */
  window: string;
  windowMs: number;
  /** Where to raise it: `budgets.clients.ci` or `budgets.default`. */
  field: string;
}

export interface BudgetConfig {
  prices: PriceTable;
  /** By client name; a client not listed has `default` (absent: no budget). */
  clients: ReadonlyMap<string, ClientBudget>;
  default?: ClientBudget;
  /** One request's spend, all its turns (`limits.max_spend_usd`; absent: no limit). */
  requestSpendUsd?: number;
}

export const DEFAULT_WINDOW = '1d';

const usd = z.number('must be a number of US dollars').min(0, 'must be 0 or more').max(1_000_000);
const perMtok = z.number('must be US dollars per million tokens, e.g. 0.15').min(0, 'must be 0 or more').max(10_000, 'must be at most 10000 (it is per million tokens)');

export const pricesSchema = z.record(
  z.string().regex(/^[\x21-\x7e]{1,200}$/, 'must be a model id or glob, e.g. gpt-4o-mini or claude-*'),
  z.strictObject({
    input_per_mtok: perMtok,
    output_per_mtok: perMtok,
  }, 'must be { input_per_mtok: N, output_per_mtok: N } in US dollars per million tokens'),
);

const clientBudgetSchema = z.strictObject(
  {
    tokens: z.number().int('must be a whole number of tokens').min(1).max(1e12).optional(),
    spend_usd: usd.optional(),
    tool_calls: z.number().int('must be a whole number of calls').min(1).max(1e9).optional(),
    window: z.string('must be hours or days, e.g. 1h or 1d').regex(WINDOW, 'must be hours or days, e.g. 1h, 12h, 1d or 7d').refine((w) => parseWindow(w) !== undefined, 'must be at most 31 days (744h or 31d)').optional(),
  },
  'must be a map such as { spend_usd: 5, tokens: 2000000, tool_calls: 500, window: 1d }',
);

export const budgetsSchema = z.strictObject({
  default: clientBudgetSchema.optional(),
  clients: z
    .record(z.string(), clientBudgetSchema)
    // Checked here rather than in the key schema, whose own message zod replaces with "Invalid key in record".
    .superRefine((clients, ctx) => {
      for (const name of Object.keys(clients)) {
        if (!CLIENT_NAME.test(name)) ctx.addIssue({ code: 'custom', path: [name], message: 'must be a client name as `kiwi keys create NAME` takes it (1 to 64 letters, digits, "_", "." or "-")' });
      }
    })
    .optional(),
});

type RawClientBudget = z.output<typeof clientBudgetSchema>;

function clientBudget(raw: RawClientBudget, field: string): ClientBudget {
  const window = raw.window ?? DEFAULT_WINDOW;
  const limits: BudgetLimits = {
    ...(raw.tokens === undefined ? {} : { tokens: raw.tokens }),
    ...(raw.spend_usd === undefined ? {} : { spendUsd: raw.spend_usd }),
    ...(raw.tool_calls === undefined ? {} : { toolCalls: raw.tool_calls }),
  };
  return { limits, window, windowMs: windowMs(window), field };
}

export function toBudgetConfig(prices: z.output<typeof pricesSchema> | undefined, budgets: z.output<typeof budgetsSchema> | undefined, requestSpendUsd: number | undefined): BudgetConfig {
  const clients = new Map(Object.entries(budgets?.clients ?? {}).map(([name, raw]) => [name, clientBudget(raw, `budgets.clients.${name}`)]));
  return {
    prices: Object.entries(prices ?? {}).map(([pattern, p]) => ({ pattern, price: { inputPerMtok: p.input_per_mtok, outputPerMtok: p.output_per_mtok } })),
    clients,
    ...(budgets?.default === undefined ? {} : { default: clientBudget(budgets.default, 'budgets.default') }),
    ...(requestSpendUsd === undefined ? {} : { requestSpendUsd }),
  };
}

/** The budget that applies to a client: its own entry, else the default. */
export function budgetOf(config: BudgetConfig, client: string): ClientBudget | undefined {
  return config.clients.get(client) ?? config.default;
}

/** True when some budget counts spend, so every model it may use needs a price. */
export function countsSpend(config: BudgetConfig): boolean {
  return config.requestSpendUsd !== undefined || config.default?.limits.spendUsd !== undefined || [...config.clients.values()].some((b) => b.limits.spendUsd !== undefined);
}
