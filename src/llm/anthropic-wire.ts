import { z } from 'zod';
import { parseJsonWithin } from '../base/json-depth.js';
import { KiwiError } from '../base/errors.js';
import type { SseEvent } from '../primitives/sse-parser.js';
import { anthropicMessages, anthropicToolFields } from './anthropic-tool-wire.js';
import type { WireDecoder } from './chat-stream.js';
import { TOOL_FIELDS } from './client-tools.js';
import { createNativeCallAssembler } from './native-call-assembler.js';
import { firstIssue, passThrough, type CheckedRequest } from './provider-options.js';
import type { ChatEvent, ChatUsage, FinishEvent, FinishReason, NativeToolCall } from './types.js';
import { malformedChunk, midStreamError, readProviderError, type UpstreamContext } from './upstream-error.js';

/**
 * Anthropic's Messages API wire format (https://docs.anthropic.com/en/api/messages-streaming).
 * Loose schemas: Anthropic adds fields and event types over time, and says clients should
 * ignore the ones they do not know.
 */

/** Anthropic requires max_tokens; this is what the adapter sends when the request gives none. */
export const DEFAULT_MAX_TOKENS = 4096;

const OWNED = ['model', 'messages', 'system', 'stream', 'max_tokens', 'temperature', 'stop_sequences', ...TOOL_FIELDS];

export function anthropicBody(r: CheckedRequest, stream: boolean, who: string): Record<string, unknown> {
  const system = r.messages.filter((m) => m.role === 'system').map((m) => m.content);
  const messages = anthropicMessages(r.messages.filter((m) => m.role !== 'system'));
  if (messages.length === 0) {
    throw new KiwiError('INVALID_INPUT', `${who}: the request has only system messages; Anthropic needs at least one user or assistant message`);
  }
  return {
    ...passThrough(r.extra, OWNED),
    model: r.model,
    ...(system.length === 0 ? {} : { system: system.join('\n\n') }),
    messages,
    ...anthropicToolFields(r.clientTools),
    max_tokens: r.maxTokens ?? DEFAULT_MAX_TOKENS,
    ...(r.temperature === undefined ? {} : { temperature: r.temperature }),
    ...(r.stop === undefined ? {} : { stop_sequences: r.stop }),
    stream,
  };
}

const count = z.number().int().nonnegative().nullish();
const usageSchema = z.looseObject({ input_tokens: count, output_tokens: count, cache_creation_input_tokens: count, cache_read_input_tokens: count });
type Usage = z.output<typeof usageSchema>;

const typed = z.looseObject({ type: z.string() });
const EVENT_SCHEMAS = {
  message_start: z.looseObject({ message: z.looseObject({ id: z.string().min(1), model: z.string(), usage: usageSchema.nullish() }) }),
  content_block_start: z.looseObject({
    index: z.number().int(),
    content_block: z.looseObject({ type: z.string(), text: z.string().nullish(), id: z.string().nullish(), name: z.string().nullish(), input: z.unknown().optional() }),
  }),
  content_block_delta: z.looseObject({ index: z.number().int(), delta: z.looseObject({ type: z.string(), text: z.unknown().optional(), partial_json: z.unknown().optional() }) }),
  message_delta: z.looseObject({ delta: z.looseObject({ stop_reason: z.string().nullish() }), usage: usageSchema.nullish() }),
} as const;

export const messageSchema = z.looseObject({
  id: z.string().min(1),
  model: z.string(),
  content: z.array(z.looseObject({ type: z.string(), text: z.string().nullish(), id: z.string().nullish(), name: z.string().nullish(), input: z.unknown().optional() })),
  stop_reason: z.string().nullish(),
  usage: usageSchema.nullish(),
});

/** The native calls (tool_use blocks) of a non-streamed message. */
/** The answer's native calls, or what is wrong with them (a call without a name, too many calls). */
export function anthropicToolCalls(content: z.output<typeof messageSchema>['content']): { calls: NativeToolCall[] } | { problem: string } {
  const assembler = createNativeCallAssembler();
  for (const [i, b] of content.entries()) {
    if (b.type !== 'tool_use') continue;
    const problem = assembler.add(i, { id: b.id, name: b.name, arguments: JSON.stringify(b.input ?? {}) });
    if (problem !== undefined) return { problem };
  }
  return assembler.done();
}

export function anthropicFinishReason(reason: string): FinishReason {
  switch (reason) {
    case 'end_turn':
    case 'stop_sequence':
      return 'stop';
    case 'max_tokens':
      return 'length';
    case 'tool_use':
      return 'tool_calls';
    case 'refusal':
      return 'content_filter';
    default:
      return 'other';
  }
}

/** Cached prompt tokens are counted apart by Anthropic; they are added so inputTokens means what OpenAI's prompt_tokens means. */
export function anthropicUsage(usage: Usage | null | undefined, previous: ChatUsage | undefined): ChatUsage | undefined {
  if (usage === null || usage === undefined) return previous;
  const out: ChatUsage = { ...previous };
  if (typeof usage.input_tokens === 'number') out.inputTokens = usage.input_tokens + (usage.cache_creation_input_tokens ?? 0) + (usage.cache_read_input_tokens ?? 0);
  if (typeof usage.output_tokens === 'number') out.outputTokens = usage.output_tokens;
  return out.inputTokens === undefined && out.outputTokens === undefined ? previous : out;
}

export function createAnthropicDecoder(ctx: UpstreamContext): WireDecoder {
  let reason: FinishReason | undefined;
  let usage: ChatUsage | undefined;
  const calls = createNativeCallAssembler();
  /** Content blocks that are tool_use, by index: only their input_json_delta is arguments. */
  const toolBlocks = new Set<number>();
  /** A tool_use block's `input` at its start, used when no input_json_delta follows. */
  const startInputs = new Map<number, string>();
  let lastChunk = 0;

  function parse<K extends keyof typeof EVENT_SCHEMAS>(type: K, json: unknown, chunk: number, data: string): z.output<(typeof EVENT_SCHEMAS)[K]> {
    const parsed = EVENT_SCHEMAS[type].safeParse(json);
    if (!parsed.success) throw malformedChunk(ctx, chunk, `does not have the shape of a ${type} event (${firstIssue(parsed.error)})`, data);
    return parsed.data as z.output<(typeof EVENT_SCHEMAS)[K]>;
  }

  return {
    push(event: SseEvent, chunk: number) {
      lastChunk = chunk;
      let json: unknown;
      try {
        json = parseJsonWithin(event.data);
      } catch {
        throw malformedChunk(ctx, chunk, 'is not valid JSON', event.data);
      }
      const base = typed.safeParse(json);
      if (!base.success) throw malformedChunk(ctx, chunk, `is not an Anthropic stream event (${firstIssue(base.error)})`, event.data);
      const events: ChatEvent[] = [];
      switch (base.data.type) {
        case 'message_start': {
          const { message } = parse('message_start', json, chunk, event.data);
          events.push({ type: 'start', id: message.id, model: message.model || ctx.model });
          usage = anthropicUsage(message.usage, usage);
          break;
        }
        case 'content_block_start': {
          const { index, content_block: block } = parse('content_block_start', json, chunk, event.data);
          if (block.type === 'text' && typeof block.text === 'string' && block.text !== '') events.push({ type: 'text', text: block.text });
          if (block.type === 'tool_use') {
            const problem = calls.add(index, { id: block.id, name: block.name });
            if (problem !== undefined) throw malformedChunk(ctx, chunk, problem, event.data);
            toolBlocks.add(index);
            const input = block.input === undefined || block.input === null ? '' : JSON.stringify(block.input);
            if (input !== '' && input !== '{}') startInputs.set(index, input);
          }
          break;
        }
        case 'content_block_delta': {
          const { index, delta } = parse('content_block_delta', json, chunk, event.data);
          if (delta.type === 'input_json_delta' && toolBlocks.has(index)) {
            if (typeof delta.partial_json !== 'string') throw malformedChunk(ctx, chunk, 'is an input_json_delta without a string `partial_json`', event.data);
            startInputs.delete(index);
            calls.add(index, { arguments: delta.partial_json });
            break;
          }
          // thinking_delta, signature_delta… carry no answer text.
          if (delta.type !== 'text_delta') break;
          if (typeof delta.text !== 'string') throw malformedChunk(ctx, chunk, 'is a text_delta without a string `text`', event.data);
          if (delta.text !== '') events.push({ type: 'text', text: delta.text });
          break;
        }
        case 'message_delta': {
          const m = parse('message_delta', json, chunk, event.data);
          if (typeof m.delta.stop_reason === 'string') reason = anthropicFinishReason(m.delta.stop_reason);
          usage = anthropicUsage(m.usage, usage);
          break;
        }
        case 'message_stop':
          return { events, done: true };
        case 'error':
          throw midStreamError(ctx, readProviderError(json) ?? { type: undefined, code: undefined, message: event.data, requestId: undefined }, chunk);
        default:
          // ping, content_block_stop, and event types added after this was written.
          break;
      }
      return { events, done: false };
    },
    flush(): ChatEvent[] {
      for (const [index, input] of startInputs) calls.add(index, { arguments: input });
      const done = calls.done();
      if ('problem' in done) throw malformedChunk(ctx, lastChunk, done.problem, '');
      return done.calls.map((call) => ({ type: 'tool_call', call }));
    },
    finish(): FinishEvent {
      return { type: 'finish', reason: reason ?? 'other', ...(usage === undefined ? {} : { usage }) };
    },
  };
}
