import { FREE, priceFor } from '../budgets/prices.js';
import type { PriceOf } from '../budgets/usage-summary.js';
import type { GatewayConfig } from './gateway-config.js';
import type { Upstreams } from './upstreams.js';

/**
 * What a model's tokens cost, for the usage executions and threads report: gateway.yaml's
 * `prices`, and nothing for a model the offline demo serves (as the budgets count it). Any other
 * model is unpriced, and reported so.
 */
export function usagePrices(config: Pick<GatewayConfig, 'budgets' | 'upstreams'>, upstreams: Pick<Upstreams, 'route'>): PriceOf {
  const demos = new Set(config.upstreams.filter((u) => u.kind === 'demo').map((u) => u.name));
  return (model) => {
    const price = priceFor(config.budgets.prices, model);
    if (price !== undefined || demos.size === 0) return price;
    try {
      return demos.has(upstreams.route(model).upstream) ? FREE : undefined;
    } catch {
      return undefined; // served by no upstream now (a thread's transcript from another config): not priced here
    }
  };
}
