import { setTimeout as sleep } from 'node:timers/promises';
import { KiwiError } from '../../src/base/errors.js';
import type { ChatEvent, ChatProvider } from '../../src/llm/types.js';
import type { Trace } from './trace-format.js';

export interface TraceProviderOptions {
  /** Replay speed: 2 streams twice as fast as recorded. */
  speed: number;
  now: () => number;
  /** The turn's clock started (its first chunk is due now). */
  onTurnStart?: (turn: number, at: number) => void;
}

/**
 * A model that replays a trace: the n-th request gets the n-th turn, each chunk when its `t`
 * (divided by `speed`) has passed since the turn began, on real timers. A request after the
 * last turn gets an empty answer, so the agent loop ends as it does after a final answer.
 */
export function createTraceProvider(trace: Trace, options: TraceProviderOptions): ChatProvider {
  let requests = 0;
  async function* stream(signal?: AbortSignal): AsyncGenerator<ChatEvent> {
    const index = requests++;
    yield { type: 'start', id: `${trace.id}-${index}`, model: 'trace' };
    const turn = trace.turns[index];
    if (turn) {
      const start = options.now();
      options.onTurnStart?.(index, start);
      for (const chunk of turn.chunks) {
        const wait = start + chunk.t / options.speed - options.now();
        if (wait >= 1) await sleep(wait, undefined, signal ? { signal } : {});
        yield { type: 'text', text: chunk.text };
      }
    }
    yield { type: 'finish', reason: 'stop' };
  }
  return {
    kind: 'demo',
    stream: (_request, signal) => stream(signal),
    complete() {
      return Promise.reject(new KiwiError('INVALID_INPUT', 'the trace provider only streams; replay traces through the agent loop'));
    },
    close: () => Promise.resolve(),
  };
}
