import { KiwiError } from '../errors.js';
import { createAnthropicProvider } from '../llm/anthropic-provider.js';
import { createDemoProvider } from '../llm/demo-provider.js';
import { createOpenAiProvider } from '../llm/openai-provider.js';
import type { ChatProvider } from '../llm/types.js';
import type { HttpClient } from '../primitives/http-client.js';
import type { GatewayConfig, UpstreamConfig } from './gateway-config.js';
import { isModelGlob, modelMatches } from './model-patterns.js';

/**
 * The upstream LLMs, one provider each, created once at startup and shared by every request.
 * Routing is by the model the client asked for: the first upstream whose models match serves it,
 * and the model id is passed through unchanged.
 */

export interface Route {
  provider: ChatProvider;
  /** The upstream's name, for logs and errors. */
  upstream: string;
  /** The model id to send upstream. */
  model: string;
}

export interface ListedModel {
  id: string;
  /** The upstream's name. */
  ownedBy: string;
  /** True for the offline demo model. */
  demo?: boolean;
}

export interface Upstreams {
  /** Throws UNKNOWN_MODEL, naming what is served and where to configure more. */
  route(model: string): Route;
  /** The exact ids that route somewhere, in routing order; glob patterns cannot be listed. */
  models(): ListedModel[];
  /** Closes every provider (an injected HttpClient is left to its owner). */
  close(): Promise<void>;
}

export interface UpstreamsOptions {
  /** One HTTP client shared by the real providers; by default each makes its own. */
  http?: HttpClient;
  /** The demo model's recorded turns (`.ai/demo/agent-turns.yaml`); missing → its built-in script. */
  demoTurnsFile?: string;
  /** Passed to the demo model; tests make it stream in bigger or smaller pieces. */
  demoChunkChars?: number;
}

interface Entry {
  config: UpstreamConfig;
  provider: ChatProvider;
}

export function createUpstreams(config: GatewayConfig, options: UpstreamsOptions = {}): Upstreams {
  const entries: Entry[] = [];
  try {
    for (const u of config.upstreams) entries.push({ config: u, provider: createProvider(u, options) });
  } catch (error) {
    // Providers already made may own HTTP clients: do not leak them when a later one fails.
    void Promise.allSettled(entries.map((e) => e.provider.close()));
    throw error;
  }
  let closed = false;

  function route(model: string): Route {
    if (closed) throw new KiwiError('INTERNAL', 'The upstreams were closed; the gateway is shutting down');
    const entry = entries.find((e) => e.config.models.some((p) => modelMatches(p, model)));
    if (entry === undefined) {
      const served = entries.map((e) => `${e.config.models.join(', ')} (${e.config.name})`).join('; ');
      throw new KiwiError(
        'UNKNOWN_MODEL',
        `No upstream serves model "${model.slice(0, 200)}". This gateway serves: ${served}. Ask for one of those, or add an upstream for it in ${config.file} (upstreams: name, kind, base_url, models), or set OPENAI_API_KEY, ANTHROPIC_API_KEY or KIWI_UPSTREAM_URL.`,
        { details: { model, served: entries.map((e) => ({ upstream: e.config.name, models: e.config.models })) } },
      );
    }
    return { provider: entry.provider, upstream: entry.config.name, model };
  }

  function models(): ListedModel[] {
    const out: ListedModel[] = [];
    const seen = new Set<string>();
    for (const e of entries) {
      for (const id of e.config.models) {
        if (isModelGlob(id) || seen.has(id)) continue;
        seen.add(id);
        // An id shadowed by an earlier glob is served by that upstream, so list it as such.
        const owner = entries.find((x) => x.config.models.some((p) => modelMatches(p, id))) ?? e;
        out.push({ id, ownedBy: owner.config.name, ...(owner.config.kind === 'demo' ? { demo: true } : {}) });
      }
    }
    return out;
  }

  async function close(): Promise<void> {
    closed = true;
    const results = await Promise.allSettled(entries.map((e) => e.provider.close()));
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  return { route, models, close };
}

function createProvider(u: UpstreamConfig, options: UpstreamsOptions): ChatProvider {
  const common = {
    ...(options.http === undefined ? {} : { http: options.http }),
    ...(u.timeoutMs === undefined ? {} : { timeoutMs: u.timeoutMs }),
  };
  switch (u.kind) {
    case 'demo':
      return createDemoProvider({
        ...(options.demoTurnsFile === undefined ? {} : { turnsFile: options.demoTurnsFile }),
        ...(options.demoChunkChars === undefined ? {} : { chunkChars: options.demoChunkChars }),
      });
    case 'openai':
      return createOpenAiProvider({ ...common, baseUrl: u.baseUrl ?? '', ...(u.apiKey === undefined ? {} : { apiKey: u.apiKey.reveal() }) });
    case 'anthropic':
      if (u.apiKey === undefined) throw new KiwiError('INVALID_INPUT', `upstream "${u.name}" (${u.source}): an anthropic upstream needs an API key; set api_key_env`);
      return createAnthropicProvider({ ...common, ...(u.baseUrl === undefined ? {} : { baseUrl: u.baseUrl }), apiKey: u.apiKey.reveal() });
  }
}
