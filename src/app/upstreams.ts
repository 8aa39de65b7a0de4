import { KiwiError } from '../base/errors.js';
import { createAnthropicProvider } from '../llm/anthropic-provider.js';
import { createDemoProvider } from '../llm/demo-provider.js';
import { createOpenAiProvider } from '../llm/openai-provider.js';
import type { ChatProvider, Route } from '../llm/types.js';
import { createHttpClient, type HttpClient } from '../primitives/http-client.js';
import type { GatewayConfig } from './gateway-config.js';
import type { SharedCache } from '../contracts/shared-cache.js';
import type { UpstreamConfig } from './upstream-config.js';
import { isModelGlob, modelMatches } from '../base/model-glob.js';
import { createUpstreamModels, DEFAULT_LIST_TTL_MS, type UpstreamModelsOptions } from './upstream-models.js';
import type { UnavailableUpstream } from '../http/chat/models-list.js';
import { failoverProvider, type FailoverEvent } from '../llm/failover-provider.js';
import { createUpstreamHealth, type UpstreamState } from '../llm/upstream-health.js';

export type { UnavailableUpstream };

/**
 * The upstream LLMs, one provider each, created once at startup and shared by every request.
 * Routing is by the model the client asked for: the first upstream whose models match serves it,
 * and the model id is passed through unchanged. An upstream's `fallbacks` that serve the model
 * too take its requests while it is down (failover-provider.ts).
 */

export interface ListedModel {
  id: string;
  /** The upstream's name. */
  ownedBy: string;
  /** True for the offline demo model. */
  demo?: boolean;
}

export interface ModelListing {
  models: ListedModel[];
  /** The upstreams whose own list could not be read, in routing order: their configured ids are still listed. */
  unavailable: UnavailableUpstream[];
}

export interface Upstreams {
  /** Throws UNKNOWN_MODEL, naming what is served and where to configure more. */
  route(model: string): Route;
  /**
   * In routing order, each upstream's configured exact ids, then the ids its own model list
   * reports that route to it (glob patterns cannot be listed; an id shown once); and the
   * upstreams whose list could not be read.
   */
  models(): Promise<ModelListing>;
  /**
   * Asks every upstream with a server (not the demo) for its model list, as `models()` does and
   * under the same timeout, and resolves with those that did not answer; `onDown` hears of each as
   * soon as it is known. `kiwi serve` runs it at start, so a server that is down is told then,
   * not at the first chat. What it read is cached for `models()`.
   */
  check(onDown?: (down: UnavailableUpstream) => void): Promise<UnavailableUpstream[]>;
  /** Each upstream's health, as its requests and the checks found it (upstream-health.ts). */
  health(): UpstreamState[];
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
  /** Told when an upstream's model list cannot be read. */
  log?: (line: string) => void;
  /** Caching and bounds of the upstreams' model lists. */
  modelLists?: UpstreamModelsOptions;
  /** Model lists the replicas share (Redis). */
  sharedCache?: SharedCache;
  /** Told when a request leaves an upstream that is down for its next one. */
  onFailover?: (event: FailoverEvent) => void;
  /** How long a down upstream is passed over before a request tries it again; default 30 s. */
  coolDownMs?: number;
  now?: () => number;
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

  // Only for the model lists: providers keep their own clients when none is injected.
  const ownHttp = options.http === undefined ? createHttpClient() : undefined;
  const lists = createUpstreamModels(
    { http: options.http ?? (ownHttp as HttpClient), ...(options.log ? { log: options.log } : {}), ...(options.sharedCache ? { shared: options.sharedCache } : {}), ...(options.now ? { now: options.now } : {}) },
    options.modelLists,
  );
  const now = options.now ?? Date.now;
  const listTtlMs = options.modelLists?.ttlMs ?? DEFAULT_LIST_TTL_MS;
  const serves = (e: Entry, model: string): boolean => e.config.models.some((p) => modelMatches(p, model));
  const owner = (model: string): Entry | undefined => entries.find((e) => serves(e, model));
  const health = createUpstreamHealth(
    entries.map((e) => e.config.name),
    { ...(options.coolDownMs === undefined ? {} : { coolDownMs: options.coolDownMs }), ...(options.now ? { now: options.now } : {}) },
  );
  // One failover provider per list of upstreams, made once: the lists are few (an upstream and its fallbacks that serve the model).
  const failovers = new Map<string, ChatProvider>();
  const failoverFor = (chain: Entry[]): ChatProvider => {
    const key = chain.map((e) => e.config.name).join('\u0000');
    let provider = failovers.get(key);
    if (provider === undefined) {
      provider = failoverProvider(
        chain.map((e) => ({ name: e.config.name, provider: e.provider })),
        { health, ...(options.onFailover ? { onFailover: options.onFailover } : {}) },
      );
      failovers.set(key, provider);
    }
    return provider;
  };

  function route(model: string): Route {
    if (closed) throw new KiwiError('INTERNAL', 'The upstreams were closed; the gateway is shutting down');
    const entry = owner(model);
    if (entry === undefined) throw unknownModel(model, entries.map((e) => e.config), config.file);
    // A fallback that does not serve the model would only refuse it (404): it is left out.
    const backups = (entry.config.fallbacks ?? []).flatMap((name) => entries.filter((e) => e.config.name === name && serves(e, model)));
    const provider = backups.length === 0 ? entry.provider : failoverFor([entry, ...backups]);
    return { provider, upstream: entry.config.name, model };
  }

  const unavailable = (e: Entry, down: string): UnavailableUpstream => ({ name: e.config.name, url: shownUrl(e.config.baseUrl ?? ''), error: down });

  async function models(): Promise<ModelListing> {
    const found = await Promise.all(entries.map((e) => lists.list(e.config)));
    const out: ListedModel[] = [];
    const seen = new Set<string>();
    const add = (id: string, by: Entry): void => {
      seen.add(id);
      out.push({ id, ownedBy: by.config.name, ...(by.config.kind === 'demo' ? { demo: true } : {}) });
    };
    entries.forEach((e, i) => {
      // A configured id shadowed by an earlier glob is served by that upstream, so it is listed as such.
      for (const id of e.config.models) if (!isModelGlob(id) && !seen.has(id)) add(id, owner(id) ?? e);
      // A reported id is listed only where a request for it would go: to the upstream that reported it.
      for (const id of found[i]?.ids ?? []) if (!seen.has(id) && owner(id) === e) add(id, e);
    });
    const down = entries.flatMap((e, i) => {
      // A list that was read, but a request since found the upstream down: down it is.
      const state = health.state(e.config.name);
      const why = found[i]?.down ?? (state?.state === 'down' ? state.error : undefined);
      return why === undefined ? [] : [unavailable(e, why)];
    });
    return { models: out, unavailable: down };
  }

  async function check(onDown?: (down: UnavailableUpstream) => void): Promise<UnavailableUpstream[]> {
    const asked = entries.filter((e) => e.config.kind !== 'demo');
    const found = await Promise.all(
      asked.map(async (e) => {
        const { down } = await lists.list(e.config);
        if (down === undefined) {
          // A list read may be as old as its cache: it vouches for an upstream nothing has heard
          // from yet, or for one found down longer ago than that (the read came after).
          const was = health.state(e.config.name);
          if (was?.state === 'unknown' || (was?.state === 'down' && now() - (was.since ?? 0) >= listTtlMs)) health.up(e.config.name);
          return undefined;
        }
        health.down(e.config.name, down);
        const one = unavailable(e, down);
        onDown?.(one);
        return one;
      }),
    );
    return found.filter((d): d is UnavailableUpstream => d !== undefined);
  }

  async function close(): Promise<void> {
    closed = true;
    lists.close();
    const results = await Promise.allSettled([...entries.map((e) => e.provider.close()), ...(ownHttp ? [ownHttp.close()] : [])]);
    const failed = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    if (failed !== undefined) throw failed.reason;
  }

  return { route, models, check, health: () => health.states(), close };
}

/** The log line of a request that left an upstream that is down. */
export function failoverLog(log: (line: string) => void): (event: FailoverEvent) => void {
  return ({ model, from, to, why }) => log(`upstream "${from}" is down (${why}); model ${model} went to its fallback "${to}", and requests pass "${from}" over until it answers again`);
}

/**
 * Checks the upstreams every `everyMs` (their model lists, as at start) and tells each change of
 * health, whoever found it (a check, or a request that failed over): down, and up again. Returns
 * the stop.
 */
export function watchUpstreams(upstreams: Pick<Upstreams, 'check' | 'health'>, everyMs: number, tell: (line: string) => void): () => void {
  let last = new Map(upstreams.health().map((s) => [s.name, s.state]));
  const timer = setInterval(() => {
    void upstreams.check().then(() => {
      const now = upstreams.health();
      for (const s of now) {
        const was = last.get(s.name);
        if (s.state === 'down' && was !== 'down') tell(`upstream "${s.name}" is down: ${s.error ?? 'no answer'}`);
        if (s.state === 'up' && was === 'down') tell(`upstream "${s.name}" answers again`);
      }
      last = new Map(now.map((s) => [s.name, s.state]));
    }, (error: unknown) => tell(`checking the upstreams failed: ${error instanceof Error ? error.message : String(error)}`));
  }, everyMs);
  timer.unref();
  return () => clearInterval(timer);
}

/** Origin and path: a base URL never carries credentials (upstream-url.ts), and a query is left out all the same. */
export function shownUrl(url: string): string {
  try {
    const u = new URL(url);
    return `${u.origin}${u.pathname === '/' ? '' : u.pathname}`;
  } catch {
    return '(invalid URL)';
  }
}

function unknownModel(model: string, upstreams: UpstreamConfig[], file: string): KiwiError {
  const shown = model.slice(0, 200);
  const details = { model, served: upstreams.map((u) => ({ upstream: u.name, models: u.models })) };
  const configure = `set OPENAI_API_KEY, ANTHROPIC_API_KEY or KIWI_UPSTREAM_URL (an OpenAI-compatible server such as Ollama: KIWI_UPSTREAM_URL=http://127.0.0.1:11434), or add an upstream in ${file} (upstreams: name, kind, base_url, models), then restart the gateway`;
  if (upstreams.every((u) => u.kind === 'demo')) {
    return new KiwiError('UNKNOWN_MODEL', `No upstream LLM is configured, so only the offline demo model (${upstreams.flatMap((u) => u.models).join(', ')}) answers, not "${shown}". To use "${shown}", ${configure}.`, { details });
  }
  const served = upstreams.map((u) => `${u.models.join(', ')} (${u.name})`).join('; ');
  return new KiwiError('UNKNOWN_MODEL', `No upstream serves model "${shown}". This gateway serves: ${served}. Ask for one of those, or ${configure}.`, { details });
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
