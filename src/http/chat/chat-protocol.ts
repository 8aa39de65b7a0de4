import { KiwiError } from '../../base/errors.js';
import type { LoopEvent, LoopEventOf, LoopMode } from '../../loop/loop-types.js';
import type { ChatRequest, NativeToolCall } from '../../llm/types.js';
import type { ErrorOut, Protocol } from './errors-out.js';
import { renderEventText } from './render-text.js';

/**
 * What one client protocol (OpenAI Chat Completions, Anthropic Messages) plugs into the shared
 * chat handler: how to read its body, how to write loop events as its stream or as one
 * response, and how its errors look.
 */

export interface ParsedChat {
  request: ChatRequest;
  stream: boolean;
  /** OpenAI's `stream_options.include_usage`: a last chunk with the usage and no choices. */
  includeUsage: boolean;
}

export interface EncodeContext {
  mode: LoopMode;
  /** The model the client asked for, mode suffix stripped; the loop's `start` event overrides it. */
  model: string;
  requestId: string;
  includeUsage: boolean;
}

/** Loop events in, `text/event-stream` text out. */
export interface StreamEncoder {
  /** The SSE text for one event; empty when it shows as nothing. */
  push(event: LoopEvent): string;
  /** The protocol's error event, sent when the loop fails after the stream started. */
  fail(out: ErrorOut): string;
  /** Sent while the loop is quiet (a long tool run), so proxies and clients do not time out. */
  keepAlive(): string;
  /** True once the `finish` event was written: the stream is complete. */
  readonly finished: boolean;
}

/** Loop events in, one non-streamed response body out. */
export interface Collector {
  push(event: LoopEvent): void;
  /** Throws INTERNAL when no `finish` event came. */
  body(): unknown;
}

export interface ChatProtocol {
  readonly name: Protocol;
  /** Throws INVALID_INPUT naming the field at fault. */
  parse(body: unknown): ParsedChat;
  errorBody(out: ErrorOut): unknown;
  streamEncoder(ctx: EncodeContext): StreamEncoder;
  collector(ctx: EncodeContext): Collector;
}

/** One SSE event. JSON text has no raw line breaks, so `data` is always a single line. */
export function sseFrame(data: unknown, event?: string): string {
  return `${event === undefined ? '' : `event: ${event}\n`}data: ${typeof data === 'string' ? data : JSON.stringify(data)}\n\n`;
}

/**
 * The call an event hands the client to run, if any: a native call of one of its own tools, or
 * (resolve-only mode) a resolved intent. Both reach the client as its protocol's tool calls.
 */
export function handedCall(event: LoopEvent, mode: LoopMode): NativeToolCall | undefined {
  if (event.type === 'native_call') return event.call;
  if (event.type === 'call' && mode === 'resolve-only') return { id: event.callId, name: event.call.tool, arguments: JSON.stringify(event.call.arguments) };
  return undefined;
}

/** Cap on the text a non-streamed response holds; past it the client is told to stream. */
export const MAX_COLLECTED_CHARS = 32 * 1024 * 1024;

/** What a non-streamed response is built from once the loop finished. */
export interface CollectedLoop {
  id: string;
  model: string;
  /** Every event but text, for the response's `kiwi.events`. */
  events: LoopEvent[];
  finish: LoopEventOf<'finish'>;
}

/**
 * The part of a non-streamed response both protocols share: the response id and model, every
 * structured event, the finish, and the cap on what is held. Readable text and the calls handed
 * to the client (handedCall) go to the protocol's own `text` and `call`.
 */
export function collectLoop(
  ctx: EncodeContext,
  id: string,
  sink: { text(text: string): void; call(call: NativeToolCall): void },
): { push(event: LoopEvent): void; done(): CollectedLoop } {
  let model = ctx.model;
  const events: LoopEvent[] = [];
  let finish: LoopEventOf<'finish'> | undefined;
  let total = 0;
  const guard = (chars: number): void => {
    total += chars;
    if (total > MAX_COLLECTED_CHARS) {
      throw new KiwiError('OUTPUT_TOO_LARGE', `The answer grew past ${MAX_COLLECTED_CHARS} characters, more than the gateway holds for a response that does not stream; ask again with "stream": true`);
    }
  };
  return {
    push(event) {
      if (finish !== undefined) return;
      if (event.type !== 'text') {
        guard(JSON.stringify(event).length);
        events.push(event);
      }
      const call = handedCall(event, ctx.mode);
      if (event.type === 'start') {
        id = event.id;
        model = event.model;
      } else if (event.type === 'finish') {
        finish = event;
      } else if (call !== undefined) {
        sink.call(call);
      } else {
        const text = renderEventText(event, ctx.mode);
        if (text === '') return;
        guard(text.length);
        sink.text(text);
      }
    },
    done() {
      if (finish === undefined) throw missingFinish();
      return { id, model, events, finish };
    },
  };
}

export function missingFinish(): KiwiError {
  return new KiwiError('INTERNAL', 'The agent loop ended without a finish event; this is a gateway bug: retry, and report it if it persists');
}
