import { expect } from 'vitest';
import { KiwiError } from '../../src/base/errors.js';
import { runAgentLoop, type AgentLoopDeps } from '../../src/loop/agent-loop.js';
import type { LoopEvent, LoopEventOf, LoopRunOptions } from '../../src/loop/loop-types.js';
import type { ChatRequest } from '../../src/llm/types.js';

/** Runs the agent loop to its end, or until `onEvent` answers true; what it threw is returned, not thrown. */
export async function collectLoop(
  deps: AgentLoopDeps,
  request: ChatRequest,
  options: LoopRunOptions = { mode: 'execute' },
  onEvent?: (event: LoopEvent) => Promise<boolean | void> | boolean | void,
): Promise<{ events: LoopEvent[]; error: unknown }> {
  const events: LoopEvent[] = [];
  try {
    for await (const event of runAgentLoop(deps, request, options)) {
      events.push(event);
      if ((await onEvent?.(event)) === true) break;
    }
  } catch (error) {
    return { events, error };
  }
  return { events, error: undefined };
}

/** A client request: the user's message, after a system message when one is given. */
export const ask = (content: string, system?: string): ChatRequest => ({
  model: 'client-model',
  messages: [...(system === undefined ? [] : [{ role: 'system' as const, content: system }]), { role: 'user', content }],
});

export const ofType = <T extends LoopEvent['type']>(events: LoopEvent[], type: T): LoopEventOf<T>[] => events.filter((e): e is LoopEventOf<T> => e.type === type);
export const textOf = (events: LoopEvent[]): string => ofType(events, 'text').map((e) => e.text).join('');

/** The last event, checked to be the finish. */
export function finishOf(events: LoopEvent[]): LoopEventOf<'finish'> {
  const last = events.at(-1);
  expect(last?.type, JSON.stringify(events)).toBe('finish');
  return last as LoopEventOf<'finish'>;
}

export function expectLoopError(error: unknown, code: string, message: RegExp): void {
  expect(error).toBeInstanceOf(KiwiError);
  expect((error as KiwiError).code, (error as KiwiError).message).toBe(code);
  expect((error as KiwiError).message).toMatch(message);
}
