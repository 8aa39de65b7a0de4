import { isKiwiError } from '../base/errors.js';
import type { ChatCompletion, ChatEvent, ChatProvider, ChatRequest } from './types.js';
import type { UpstreamHealth } from './upstream-health.js';

/** One upstream a model can be served by, in the order the config gives (an upstream, then its `fallbacks`). */
export interface FailoverCandidate {
  name: string;
  provider: ChatProvider;
}

export interface FailoverEvent {
  model: string;
  from: string;
  to: string;
  /** Why `from` was left: the error's message. */
  why: string;
}

/**
 * A provider that serves a request from the first of its upstreams that answers: one that is down
 * (its connection refused, a connect or header timeout, a 5xx, 408 or 429) before the request's
 * first event is left for the next, and is passed over by later requests for the health's
 * cool-down. Once an event has come, the request stays where it is: what the client has seen
 * cannot be taken back, so a later failure is the client's, as without failover. A client's
 * abort, or a refusal that another upstream would give as well (400, 401, an unknown model), is
 * never failed over. When every upstream is down, each is tried all the same, in order.
 */
export function failoverProvider(candidates: readonly FailoverCandidate[], options: { health: UpstreamHealth; onFailover?: (event: FailoverEvent) => void }): ChatProvider {
  const first = candidates[0];
  if (first === undefined) throw new TypeError('failoverProvider needs at least one upstream');
  const { health } = options;
  const ordered = (): FailoverCandidate[] => {
    const usable = candidates.filter((c) => health.usable(c.name));
    return usable.length === 0 ? [...candidates] : [...usable, ...candidates.filter((c) => !usable.includes(c))];
  };

  /** Runs `attempt` on each upstream in turn until one does not fail in a way the next could fix. */
  async function firstAnswer<T>(request: ChatRequest, signal: AbortSignal | undefined, attempt: (provider: ChatProvider) => Promise<T>): Promise<T> {
    const order = ordered();
    for (let i = 0; ; i++) {
      const c = order[i] as FailoverCandidate;
      try {
        const answer = await attempt(c.provider);
        health.up(c.name);
        return answer;
      } catch (error) {
        if (signal?.aborted || !upstreamDown(error)) throw error;
        const why = error instanceof Error ? error.message : String(error);
        health.down(c.name, why);
        const next = order[i + 1];
        if (next === undefined) throw error;
        options.onFailover?.({ model: request.model, from: c.name, to: next.name, why });
      }
    }
  }

  return {
    kind: first.provider.kind,
    async *stream(request: ChatRequest, signal?: AbortSignal): AsyncGenerator<ChatEvent> {
      let events: AsyncIterator<ChatEvent> | undefined;
      const head = await firstAnswer(request, signal, async (provider) => {
        const it = provider.stream(request, signal)[Symbol.asyncIterator]();
        try {
          const step = await it.next();
          events = it;
          return step;
        } catch (error) {
          await it.return?.().catch(() => undefined);
          throw error;
        }
      });
      if (head.done || events === undefined) return;
      yield head.value;
      // yield* passes a consumer's early return on to the upstream's iterator, which cancels it.
      const rest = events;
      yield* { [Symbol.asyncIterator]: () => rest };
    },
    complete: (request: ChatRequest, signal?: AbortSignal): Promise<ChatCompletion> => firstAnswer(request, signal, (provider) => provider.complete(request, signal)),
    // The upstreams' own providers are closed by their owner (upstreams.ts), once each.
    close: async () => undefined,
  };
}

/** An upstream that is down or overloaded, as opposed to a request any upstream would refuse. */
export function upstreamDown(error: unknown): boolean {
  if (!isKiwiError(error)) return false;
  if (error.code === 'HTTP_TIMEOUT') return error.details?.['phase'] !== 'body';
  if (error.code !== 'UPSTREAM_HTTP') return false;
  const status = error.details?.['status'];
  // No status: the connection was refused or cut before a response.
  return typeof status !== 'number' || status === 408 || status === 429 || status >= 500;
}
