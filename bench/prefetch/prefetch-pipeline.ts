import { createCounters, type Counters } from '../../src/prefetch/counters.js';
import { createPrefetchDispatcher } from '../../src/prefetch/dispatcher.js';
import { createPrefetchCache, type PrefetchCache } from '../../src/prefetch/prefetch-cache.js';
import { createPrefetchRequest } from '../../src/prefetch/prefetch-request.js';
import { createPrefetchingResolver, type CallingProxy, type PrefetchingResolver } from '../../src/prefetch/prefetching-resolver.js';
import { createPredictor, type Predictor } from '../../src/prefetch/predictor.js';
import type { SnapshotResolver } from '../../src/prefetch/snapshot-resolver.js';
import type { TransitionModel } from '../../src/prefetch/types.js';
import type { CallOutcome } from '../../src/proxy/tool-call.js';
import { DEFAULT_PREFETCH, type PrefetchConfig } from '../../src/prefetch/prefetch-config.js';
import type { BenchWorld } from './bench-world.js';
import type { ReplayPipeline } from './replay-trace.js';

/** The prefetch machinery of one run, shared by every trace replayed with prefetch on. */
export interface PrefetchRig {
  counters: Counters;
  config: PrefetchConfig;
  cache: PrefetchCache;
  prefetching: PrefetchingResolver;
  predictor: Predictor;
  /** What each snapshot's prediction cost (embed + search + combining), ms, in order. */
  predictorMs: number[];
}

export interface RigOptions {
  transitions?: TransitionModel;
  /** What snapshots are searched with (see `openSnapshotResolver`); the "on" resolver when left out. */
  snapshots?: Pick<SnapshotResolver, 'resolver' | 'sharesResolverIndex'>;
  /** The gateway's prefetch settings (gateway.yaml `prefetch:`); its defaults when left out. */
  config?: Partial<PrefetchConfig>;
  log?: (message: string) => void;
}

export function createPrefetchRig(world: BenchWorld, options: RigOptions = {}): PrefetchRig {
  const config = { ...DEFAULT_PREFETCH, ...options.config };
  const counters = createCounters();
  const cache = createPrefetchCache({ ttlMs: config.ttlMs, counters });
  const predictorMs: number[] = [];
  const inner = createPredictor({ resolver: options.snapshots?.resolver ?? world.resolvers.on, ...(options.transitions ? { transitions: options.transitions } : {}) });
  const predictor: Predictor = {
    async predict(snapshot, o) {
      const result = await inner.predict(snapshot, o);
      predictorMs.push(result.ms);
      return result;
    },
  };
  const prefetching = createPrefetchingResolver({
    resolver: world.resolvers.on,
    cache,
    counters,
    tools: world.tools,
    minCosine: config.minCosine,
    reuseSearches: options.snapshots?.sharesResolverIndex ?? true,
  });
  return { counters, config, cache, prefetching, predictor, predictorMs };
}

/** Prefetch off: the plain resolver and the proxy, as the gateway runs without prefetch. */
export function plainPipeline(world: BenchWorld): ReplayPipeline {
  return {
    resolve: (intent, o) => world.resolvers.off.resolve(intent, o),
    call: (call) => world.proxy.call(call),
  };
}

/**
 * Prefetch on, for one request (trace), wired as the gateway wires it (src/runs/run-prefetch.ts)
 * except that no transitions are learned from the traces being measured: a dispatcher and session
 * of its own, the run's cache and prefetching resolver. `finish` waits for predictions to settle and empties the cache, so what
 * a trace prefetched and never used is counted as wasted for that trace and helps no later one.
 */
export function prefetchPipeline(world: BenchWorld, rig: PrefetchRig, options: RigOptions = {}): { pipeline: ReplayPipeline; finish(): Promise<void> } {
  const dispatcher = createPrefetchDispatcher({
    predictor: rig.predictor,
    resolver: world.resolvers.on,
    cache: rig.cache,
    tools: world.tools,
    call: (call) => world.proxy.call(call),
    session: world.session,
    caller: { client: world.session },
    counters: rig.counters,
    concurrency: rig.config.concurrency,
    speculate: rig.config.speculate,
    ...(options.log ? { log: options.log } : {}),
  });
  const reused = new WeakSet<CallOutcome>();
  const proxy: CallingProxy = {
    call: (request) => world.proxy.call(request),
    async reuse(request, earlier) {
      const outcome = await world.proxy.reuse(request, earlier);
      reused.add(outcome);
      return outcome;
    },
  };
  const request = createPrefetchRequest({ prefetching: rig.prefetching, dispatcher, proxy });
  const session = request.session;
  const pipeline: ReplayPipeline = {
    observer: request.observer,
    resolve: request.resolve,
    call: request.call,
    reused: (outcome) => reused.has(outcome),
  };
  return {
    pipeline,
    async finish() {
      session.end();
      await dispatcher.idle();
      rig.cache.clear();
    },
  };
}
