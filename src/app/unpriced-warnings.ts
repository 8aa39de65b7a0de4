import type { UpstreamConfig } from './upstream-config.js';
import { countsSpend, type BudgetConfig } from '../budgets/budget-config.js';
import { priceFor } from '../budgets/prices.js';

/**
 * Models an upstream serves that have no price while some budget counts spend: a warning each at
 * start. A request for one is refused (budget-meter.ts); this says so before the first one is.
 * A glob upstream pattern is priced when some price pattern covers it as written (`gpt-*` by
 * `gpt-*` or `*`); the demo upstream costs nothing.
 */
export function unpricedWarnings(config: BudgetConfig, upstreams: readonly UpstreamConfig[], file: string): string[] {
  if (!countsSpend(config)) return [];
  const out: string[] = [];
  for (const u of upstreams) {
    if (u.kind === 'demo') continue;
    const unpriced = u.models.filter((m) => priceFor(config.prices, m) === undefined);
    if (unpriced.length > 0) {
      out.push(`upstream "${u.name}" serves ${unpriced.map((m) => `"${m}"`).join(', ')} with no price in \`prices\` of ${file}: a budget counts spend, so requests for such a model are refused until it is priced`);
    }
  }
  return out;
}
