import { priceFor, type PriceTable } from '../budgets/prices.js';
import type { Tracing } from '../contracts/tracing.js';
import type { ChatUsage } from '../llm/types.js';
import { createModelFallback, type ResolverFallback } from '../resolver/model-fallback.js';
import type { FallbackLimits } from '../resolver/resolver-config.js';
import { tracedProvider } from './traced-loop.js';
import type { Route } from '../llm/types.js';

/**
 * A chat's fallback model. Where resolver.yaml names none and does not turn it off, it is the
 * request's own: the same upstream and the model id the client asked for, in a side request
 * (docs/resolution.md "The fallback model"). Whichever model it is, every side request is made on
 * the client's behalf, so its tokens and spend are charged to the client's budget as they are
 * known, whatever came of the answer.
 */
export function requestFallback(deps: {
  /** resolver.yaml's fallback model, routed at start; absent, the request's own is asked when `own` is set. */
  named?: ResolverFallback;
  /** The request's own model's limits (resolver.yaml names no fallback model and does not say `off`). */
  own?: FallbackLimits;
  route: Route;
  prices: PriceTable;
  tracing?: Tracing;
  /** Charges a side request's usage to the request's budget; `model` is the model it asked. */
  charge(usage: ChatUsage, model: string): void;
}): ResolverFallback | undefined {
  const { route } = deps;
  const price = priceFor(deps.prices, route.model);
  const fallback =
    deps.named ??
    (deps.own &&
      createModelFallback({
        provider: deps.tracing === undefined ? route.provider : tracedProvider(route.provider, deps.tracing, route.upstream),
        model: route.model,
        upstream: route.upstream,
        candidates: deps.own.candidates,
        timeoutMs: deps.own.timeoutMs,
        ...(price === undefined ? {} : { price }),
      }));
  return fallback && chargedFallback(fallback, deps.charge);
}

/** The fallback, each answer's usage charged; one that used nothing (refused before answering) charges nothing. */
export function chargedFallback(fallback: ResolverFallback, charge: (usage: ChatUsage, model: string) => void): ResolverFallback {
  return {
    model: fallback.model,
    upstream: fallback.upstream,
    candidates: fallback.candidates,
    async ask(ask) {
      const answer = await fallback.ask(ask);
      const { inputTokens, outputTokens, estimated } = answer.cost;
      if (inputTokens !== undefined || outputTokens !== undefined) charge({ inputTokens: inputTokens ?? 0, outputTokens: outputTokens ?? 0, ...(estimated ? { estimated } : {}) }, fallback.model);
      return answer;
    },
  };
}
