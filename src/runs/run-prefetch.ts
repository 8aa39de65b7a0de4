import { createCounters, type Counters } from '../prefetch/counters.js';
import { createPrefetchDispatcher, DEFAULT_MAX_SPECULATIONS } from '../prefetch/dispatcher.js';
import { createPrefetchCache } from '../prefetch/prefetch-cache.js';
import { createPrefetchRequest } from '../prefetch/prefetch-request.js';
import { createPrefetchingResolver } from '../prefetch/prefetching-resolver.js';
import { createPredictor } from '../prefetch/predictor.js';
import { openSnapshotResolver, type SnapshotResolver } from '../prefetch/snapshot-resolver.js';
import { openPredictorFile, predictorFile } from '../prefetch/predictor-file.js';
import type { LearnedTransitionModel } from '../prefetch/transition-model.js';
import type { Project } from '../project/open-project.js';
import type { ResolverRuntime } from '../resolver/resolver-runtime.js';
import type { ResolveOptions } from '../resolver/types.js';
import type { Caller } from '../policy/caller.js';
import type { ToolCall } from '../proxy/tool-call.js';
import type { AgentLoopDeps } from '../loop/agent-loop.js';
import type { PrefetchConfig } from '../prefetch/prefetch-config.js';
import type { LoopCall, LoopMode } from '../loop/loop-types.js';


export type RequestDeps = Pick<AgentLoopDeps, 'resolve' | 'call' | 'observer'>;

export interface PrefetchRequestOptions {
  mode: LoopMode;
  /** Whose request it is: its calls, speculative ones included, are checked and counted as this client's. */
  caller: Caller;
  /** The conversation the audit files its calls under. */
  conversation: string;
  /** The request's own fallback model and the candidates its caller may run, given to every resolution it makes. */
  resolveWith?: Pick<ResolveOptions, 'fallback' | 'mayCall'>;
  /** The request's tool-call limit: it never starts more speculative runs than that. */
  maxToolCalls?: number;
}

export interface RunPrefetch {
  counters: Counters;
  /** What snapshots are searched with (the intents resolve with the resolver's own embedder). */
  snapshots: Pick<SnapshotResolver, 'embedderId' | 'sharesResolverIndex' | 'buildMs'>;
  transitions: LearnedTransitionModel;
  /**
   * How one request resolves and calls: through the prefetch cache when prefetch is on. In
   * resolve-only mode the client runs the tools, so nothing is run speculatively for it. A request
   * starts at most 8 speculative runs, and never more than its `maxToolCalls` when given.
   */
  forRequest(request: PrefetchRequestOptions): RequestDeps;
  /** Saves what the transition model learned while serving, unless it learned nothing or the file changed meanwhile. */
  close(): Promise<void>;
}

export interface RunPrefetchOptions {
  config: PrefetchConfig;
  project: Project;
  runtime: Pick<ResolverRuntime, 'resolver' | 'embedderId' | 'tools' | 'settings'>;
  log?: (line: string) => void;
  signal?: AbortSignal;
}

/**
 * Predictive prefetch for the gateway (DESIGN §5): one TTL cache and one transition model for the
 * process, one dispatcher and snapshotter per request. Every call still goes through the tool
 * proxy; a speculative result is only reused, via `proxy.reuse`, for exactly the call that ran.
 */
export async function openRunPrefetch(options: RunPrefetchOptions): Promise<RunPrefetch> {
  const { config, project, runtime } = options;
  const file = predictorFile(project.root);
  const stored = await openPredictorFile(file);
  const transitions = stored.model;
  const counters = createCounters();
  const cache = createPrefetchCache({ ttlMs: config.ttlMs, counters });
  // The static index is built only when prefetch runs (~0.5 s and ~4 MB at 4k tools); sharing the resolver's costs nothing.
  const snapshots = await openSnapshotResolver({
    embedder: config.enabled ? config.embedder : 'resolver',
    resolver: runtime.resolver,
    resolverEmbedderId: runtime.embedderId,
    tools: runtime.tools,
    settings: runtime.settings,
    ...(options.signal ? { signal: options.signal } : {}),
  });
  const predictor = createPredictor({ resolver: snapshots.resolver, transitions });
  const prefetching = createPrefetchingResolver({
    resolver: runtime.resolver,
    cache,
    counters,
    tools: project.registry.tools,
    minCosine: config.minCosine,
    reuseSearches: snapshots.sharesResolverIndex,
  });
  const proxy = project.proxy;

  function forRequest({ mode, caller, conversation, maxToolCalls, resolveWith }: PrefetchRequestOptions): RequestDeps {
    const bind = (c: LoopCall): ToolCall => ({ ...c, caller: { ...c.caller, session: conversation, client: caller.client, ...(caller.context ? { context: caller.context } : {}) } });
    if (!config.enabled) return { resolve: (intent, o) => runtime.resolver.resolve(intent, { ...o, ...resolveWith }), call: (c) => proxy.call(bind(c)) };
    const dispatcher = createPrefetchDispatcher({
      predictor,
      resolver: runtime.resolver,
      cache,
      tools: project.registry.tools,
      call: (c) => proxy.call(c),
      session: conversation,
      caller,
      counters,
      concurrency: config.concurrency,
      speculate: config.speculate && mode === 'execute',
      maxSpeculations: Math.min(DEFAULT_MAX_SPECULATIONS, maxToolCalls ?? DEFAULT_MAX_SPECULATIONS),
      ...(options.log ? { log: options.log } : {}),
    });
    let previous: string | null = null;
    const request = createPrefetchRequest({
      prefetching,
      dispatcher,
      proxy,
      onCalled(tool) {
        // Learning as it serves: the next request's predictions know this step followed the last.
        transitions.observe(previous, tool);
        previous = tool;
      },
    });
    return { resolve: (intent, o) => request.resolve(intent, { ...o, ...resolveWith }), call: (c) => request.call(bind(c)), observer: request.observer };
  }

  return {
    counters,
    snapshots,
    transitions,
    forRequest,
    async close() {
      await snapshots.close();
      try {
        if ((await stored.save()) === 'file-changed') {
          options.log?.(`${file} changed while the gateway ran (kiwi predictor train?): kept it; what the gateway learned is in the audit log, which the next train reads`);
        }
      } catch (error) {
        options.log?.(`could not save the learned predictor model to ${file}: ${error instanceof Error ? error.message : String(error)}`);
      }
    },
  };
}
