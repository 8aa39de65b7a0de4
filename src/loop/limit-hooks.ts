import type { Fired } from '../proxy/call-hooks.js';
import type { LoopEvent } from './loop-types.js';

/**
 * The hooks' `limit` event when a limit stops a chat request (turns, tool calls, tokens, duration,
 * repeats, a budget): fired beside the request's end, not before it, so a slow webhook never holds
 * the client's last event. What the hooks noted or asked for goes to the gateway's log.
 */
export async function* withLimitHooks(
  events: AsyncIterable<LoopEvent>,
  fire: (code: string, detail: Record<string, unknown>) => Promise<Fired>,
  log: ((line: string) => void) | undefined,
): AsyncGenerator<LoopEvent> {
  for await (const event of events) {
    if (event.type === 'finish' && event.limit !== undefined) {
      const limit = event.limit;
      void fire(limit, { turns: event.turns, tool_calls: event.toolCalls, usage: event.usage }).then(
        (fired) => fired.notes.forEach((note) => log?.(`hooks on the ${limit} limit: ${note}`)),
        (error: unknown) => log?.(`hooks on the ${limit} limit failed: ${error instanceof Error ? error.message : String(error)}`),
      );
    }
    yield event;
  }
}
