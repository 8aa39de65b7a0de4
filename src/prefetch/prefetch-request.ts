import type { CallOutcome, ToolCall } from '../proxy/tool-call.js';
import type { Resolution, ResolveOptions } from '../resolver/types.js';
import type { PrefetchDispatcher } from './dispatcher.js';
import { createPrefetchSession, type PrefetchSession } from './prefetch-session.js';
import type { CallingProxy, PrefetchingResolver } from './prefetching-resolver.js';

/** What the agent loop needs from prefetch for one request (the loop's `resolve`, `call` and observer). */
export interface PrefetchRequest {
  session: PrefetchSession;
  observer: { onText(text: string): void; onIntentProgress(partial: string): void; onIntent(intent: string): void; end(): void };
  resolve(intent: string, options: Pick<ResolveOptions, 'context' | 'signal' | 'fallback' | 'mayCall'>): Promise<Resolution>;
  call(request: ToolCall): Promise<CallOutcome>;
}

export interface PrefetchRequestDeps {
  prefetching: PrefetchingResolver;
  dispatcher: PrefetchDispatcher;
  proxy: CallingProxy;
  /** Told about every call that succeeded, in order (the gateway learns transitions from it). */
  onCalled?: (tool: string) => void;
}

/**
 * One request's prefetch, wired the same way in the gateway and in the benchmark: the streamed
 * text and the intent being written feed the snapshots; an intent resolves through the cache and
 * may start its early call; a call takes an identical speculative result or runs for real.
 */
export function createPrefetchRequest(deps: PrefetchRequestDeps): PrefetchRequest {
  const { prefetching, dispatcher, proxy } = deps;
  const session = createPrefetchSession({ dispatcher });
  return {
    session,
    observer: {
      onText: (text) => session.onText(text),
      onIntentProgress: (partial) => session.onIntentProgress(partial),
      onIntent: (intent) => session.onIntent(intent),
      end: () => session.end(),
    },
    async resolve(intent, options) {
      const resolution = await prefetching.resolve(intent, { ...options, early: (call, entry) => dispatcher.speculateCall(entry, call) });
      if (resolution.status === 'resolved') session.onResolved(resolution.call.tool);
      return resolution;
    },
    async call(request) {
      const outcome = await prefetching.callThrough(request, proxy);
      if (outcome.status === 'ok') deps.onCalled?.(request.target.tool);
      return outcome;
    },
  };
}
