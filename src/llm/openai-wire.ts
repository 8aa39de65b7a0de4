import { z } from 'zod';
import { parseJsonWithin } from '../base/json-depth.js';
import type { SseEvent } from '../primitives/sse-parser.js';
import type { WireDecoder } from './chat-stream.js';
import { TOOL_FIELDS } from './client-tools.js';
import { createNativeCallAssembler } from './native-call-assembler.js';
import { learnTextTemplate, type TextTemplate } from './text-template.js';
import { openAiMessages, openAiToolFields } from './openai-tool-wire.js';
import { firstIssue, passThrough, type CheckedRequest } from './provider-options.js';
import type { ChatEvent, ChatUsage, FinishEvent, FinishReason, NativeToolCall } from './types.js';
import { malformedChunk, midStreamError, readProviderError, type UpstreamContext } from './upstream-error.js';

/**
 * The OpenAI Chat Completions wire format, as OpenAI, llama.cpp, Ollama and vLLM speak it.
 * Schemas are loose: upstreams add fields (logprobs, timings, reasoning_content…) and only the
 * ones read here must have the documented type.
 */

/** Fields the adapter sets; the same names in the client's body are ignored. */
const OWNED = ['model', 'messages', 'stream', 'stream_options', 'max_tokens', 'temperature', 'stop', ...TOOL_FIELDS];

export function openAiBody(r: CheckedRequest, stream: boolean): Record<string, unknown> {
  return {
    ...passThrough(r.extra, OWNED),
    model: r.model,
    messages: openAiMessages(r.messages),
    ...openAiToolFields(r.clientTools),
    ...(r.maxTokens === undefined ? {} : { max_tokens: r.maxTokens }),
    ...(r.temperature === undefined ? {} : { temperature: r.temperature }),
    ...(r.stop === undefined ? {} : { stop: r.stop }),
    stream,
    // OpenAI refuses stream_options on a request that does not stream.
    ...(stream ? { stream_options: { include_usage: true } } : {}),
  };
}

const count = z.number().int().nonnegative().nullish();
const usageSchema = z.looseObject({ prompt_tokens: count, completion_tokens: count });

const toolCallDelta = z.looseObject({
  index: z.number().int().nonnegative().nullish(),
  id: z.string().nullish(),
  function: z.looseObject({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});

const chunkSchema = z.looseObject({
  id: z.string().nullish(),
  model: z.string().nullish(),
  choices: z.array(
    z.looseObject({
      index: z.number().int().nullish(),
      delta: z.looseObject({ content: z.string().nullish(), tool_calls: z.array(toolCallDelta).nullish() }).nullish(),
      finish_reason: z.string().nullish(),
    }),
  ),
  usage: usageSchema.nullish(),
});

export const completionSchema = z.looseObject({
  id: z.string().nullish(),
  model: z.string().nullish(),
  choices: z
    .array(
      z.looseObject({
        index: z.number().int().nullish(),
        message: z.looseObject({
          content: z.string().nullish(),
          tool_calls: z.array(z.looseObject({ id: z.string().nullish(), function: z.looseObject({ name: z.string().min(1), arguments: z.string().nullish() }) })).nullish(),
        }),
        finish_reason: z.string().nullish(),
      }),
    )
    .min(1),
  usage: usageSchema.nullish(),
});

export function openAiFinishReason(reason: string): FinishReason {
  if (reason === 'stop' || reason === 'length' || reason === 'tool_calls' || reason === 'content_filter') return reason;
  if (reason === 'function_call') return 'tool_calls';
  return 'other';
}

/** The native calls of a non-streamed answer's message. */
/** The answer's native calls, or what is wrong with them (a call without a name, too many calls). */
export function openAiToolCalls(message: z.output<typeof completionSchema>['choices'][number]['message']): { calls: NativeToolCall[] } | { problem: string } {
  const assembler = createNativeCallAssembler();
  for (const [i, c] of (message.tool_calls ?? []).entries()) {
    const problem = assembler.add(i, { id: c.id, name: c.function.name, arguments: c.function.arguments });
    if (problem !== undefined) return { problem };
  }
  return assembler.done();
}

export function openAiUsage(usage: z.output<typeof usageSchema> | null | undefined): ChatUsage | undefined {
  if (usage === null || usage === undefined) return undefined;
  const out: ChatUsage = {};
  if (typeof usage.prompt_tokens === 'number') out.inputTokens = usage.prompt_tokens;
  if (typeof usage.completion_tokens === 'number') out.outputTokens = usage.completion_tokens;
  return out.inputTokens === undefined && out.outputTokens === undefined ? undefined : out;
}

type Chunk = z.output<typeof chunkSchema>;
const isNullish = (v: unknown): v is null | undefined => v === null || v === undefined;
const stringOrNullish = (v: unknown): boolean => isNullish(v) || typeof v === 'string';
const isRecord = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/**
 * The common chunk (no usage) checked by hand: zod on every chunk was a measurable share of the
 * gateway's pass-through cost. Anything else, well-formed or not, goes through the schema, which
 * also writes the error message.
 */
function plainChunk(json: unknown): Chunk | undefined {
  if (!isRecord(json) || !stringOrNullish(json['id']) || !stringOrNullish(json['model']) || !isNullish(json['usage'])) return undefined;
  const choices = json['choices'];
  if (!Array.isArray(choices)) return undefined;
  for (const choice of choices) {
    if (!isRecord(choice) || !stringOrNullish(choice['finish_reason'])) return undefined;
    const index = choice['index'];
    if (!isNullish(index) && !Number.isInteger(index)) return undefined;
    const delta = choice['delta'];
    if (!isNullish(delta) && !(isRecord(delta) && stringOrNullish(delta['content']) && isNullish(delta['tool_calls']))) return undefined;
  }
  return json as Chunk;
}

export function createOpenAiDecoder(ctx: UpstreamContext): WireDecoder {
  let reason: FinishReason | undefined;
  let usage: ChatUsage | undefined;
  const calls = createNativeCallAssembler();
  let lastChunk = 0;
  let template: TextTemplate | undefined;

  return {
    push(event: SseEvent, chunk: number) {
      lastChunk = chunk;
      const known = event.event === 'error' ? undefined : template?.textOf(event.data);
      if (known !== undefined) return { events: known === '' ? [] : [{ type: 'text', text: known }], done: false };
      if (event.data.trim() === '[DONE]') return { events: [], done: true };
      let json: unknown;
      try {
        json = parseJsonWithin(event.data);
      } catch {
        throw malformedChunk(ctx, chunk, 'is not valid JSON', event.data);
      }
      // OpenAI sends `data: {"error": …}`; some servers name the event `error` as well.
      const error = readProviderError(json);
      if (error !== undefined || event.event === 'error') {
        throw midStreamError(ctx, error ?? { type: undefined, code: undefined, message: event.data, requestId: undefined }, chunk);
      }
      let c = plainChunk(json);
      const plain = c !== undefined;
      if (c === undefined) {
        const parsed = chunkSchema.safeParse(json);
        if (!parsed.success) throw malformedChunk(ctx, chunk, `does not have the shape of a chat.completion.chunk (${firstIssue(parsed.error)})`, event.data);
        c = parsed.data;
      }
      const events: ChatEvent[] = [];
      if (typeof c.id === 'string' && c.id !== '') events.push({ type: 'start', id: c.id, model: c.model ?? ctx.model });
      // n > 1 is the client's business; the gateway follows choice 0.
      const choice = c.choices.find((x) => (x.index ?? 0) === 0);
      const text = choice?.delta?.content;
      if (typeof text === 'string' && text !== '') events.push({ type: 'text', text });
      // A plain chunk whose only news is its text teaches the shape of the ones to come.
      if (plain && typeof text === 'string' && choice?.finish_reason == null) template = learnTextTemplate(event.data, text) ?? template;
      for (const [i, part] of (choice?.delta?.tool_calls ?? []).entries()) {
        const problem = calls.add(part.index ?? i, { id: part.id, name: part.function?.name, arguments: part.function?.arguments });
        if (problem !== undefined) throw malformedChunk(ctx, chunk, problem, event.data);
      }
      if (typeof choice?.finish_reason === 'string') reason = openAiFinishReason(choice.finish_reason);
      // The usage chunk comes after the finish_reason chunk (stream_options.include_usage).
      usage = openAiUsage(c.usage) ?? usage;
      return { events, done: false };
    },
    flush(): ChatEvent[] {
      const done = calls.done();
      if ('problem' in done) throw malformedChunk(ctx, lastChunk, done.problem, '');
      return done.calls.map((call) => ({ type: 'tool_call', call }));
    },
    finish(): FinishEvent {
      return { type: 'finish', reason: reason ?? 'other', ...(usage === undefined ? {} : { usage }) };
    },
  };
}
