import { priceFor } from '../budgets/prices.js';
import type { Tracing } from '../contracts/tracing.js';
import { isKiwiError, KiwiError } from '../base/errors.js';
import { openGgufChatModel } from '../llm/gguf-chat-model.js';
import { createLocalModelFallback } from '../resolver/local-model-fallback.js';
import { createModelFallback, type ResolverFallback } from '../resolver/model-fallback.js';
import type { NamedFallback } from '../resolver/resolver-config.js';
import type { GatewayConfig } from './gateway-config.js';
import { tracedProvider } from '../runs/traced-loop.js';
import type { Upstreams } from './upstreams.js';

/**
 * resolver.yaml's `fallback:` routed through gateway.yaml: a tier is looked up in `model_tiers`,
 * a model goes to the first upstream that serves it, as a client's request would. Checked at
 * start: a fallback that names nothing served stops the gateway with what to fix. A model file is
 * loaded here, in the gateway's process (node-llama-cpp, imported only then), once: whoever
 * opened it closes it (`ResolverFallback.close`).
 */
export function routeResolverFallback(deps: { config: GatewayConfig; upstreams: Upstreams; tracing?: Tracing; log?: (message: string) => void }): (fallback: NamedFallback) => ResolverFallback | Promise<ResolverFallback> {
  return (fallback) => {
    const where = '.ai/config/resolver.yaml: fallback';
    if ('modelFile' in fallback) return openLocalFallback(fallback, `${where}.model_file`, deps.log);
    let model: string;
    if ('tier' in fallback) {
      const mapped = deps.config.modelTiers[fallback.tier];
      if (mapped === undefined) {
        const tiers = Object.keys(deps.config.modelTiers);
        throw new KiwiError('INVALID_INPUT', `${where}.tier: "${fallback.tier}" is not in gateway.yaml's model_tiers (${tiers.length > 0 ? tiers.join(', ') : 'none are set'}); add it there, or give fallback.model`);
      }
      model = mapped;
    } else model = fallback.model;
    let route;
    try {
      route = deps.upstreams.route(model);
    } catch (error) {
      if (!isKiwiError(error, 'UNKNOWN_MODEL')) throw error;
      throw new KiwiError('INVALID_INPUT', `${where}: no upstream in gateway.yaml serves the model "${model}"; add it to an upstream's models (a local llama.cpp or Ollama server is an upstream of kind openai, see docs/resolution.md)`);
    }
    const price = priceFor(deps.config.budgets.prices, route.model);
    return createModelFallback({
      provider: deps.tracing === undefined ? route.provider : tracedProvider(route.provider, deps.tracing, route.upstream),
      model: route.model,
      upstream: route.upstream,
      candidates: fallback.candidates,
      timeoutMs: fallback.timeoutMs,
      ...(price === undefined ? {} : { price }),
    });
  };
}

async function openLocalFallback(fallback: Extract<NamedFallback, { modelFile: string }>, where: string, log: ((message: string) => void) | undefined): Promise<ResolverFallback> {
  const model = await openGgufChatModel({ file: fallback.modelFile, where, ...(log ? { log } : {}) });
  return createLocalModelFallback({ model, candidates: fallback.candidates, timeoutMs: fallback.timeoutMs });
}
