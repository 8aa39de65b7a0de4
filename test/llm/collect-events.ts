import { expect } from 'vitest';
import { KiwiError, type ErrorCode } from '../../src/base/errors.js';
import type { ChatEvent } from '../../src/llm/types.js';

/** Reads a chat stream to its end; an error the iterator throws is returned beside the events seen before it. */
export async function drain(stream: AsyncIterable<ChatEvent>): Promise<{ events: ChatEvent[]; error: unknown }> {
  const events: ChatEvent[] = [];
  try {
    for await (const event of stream) events.push(event);
  } catch (error) {
    return { events, error };
  }
  return { events, error: undefined };
}

export function textOf(events: ChatEvent[]): string {
  return events.map((e) => (e.type === 'text' ? e.text : '')).join('');
}

/** Reads a stream that must fail with `code`; returns the error and the events before it. */
export async function streamFailure(stream: AsyncIterable<ChatEvent>, code: ErrorCode): Promise<{ events: ChatEvent[]; error: KiwiError }> {
  const { events, error } = await drain(stream);
  expect(error).toBeInstanceOf(KiwiError);
  expect((error as KiwiError).code, (error as KiwiError).message).toBe(code);
  return { events, error: error as KiwiError };
}
