import type { LoopEvent } from '../../../loop/loop-types.js';
import type { ChatUsage, FinishReason, NativeToolCall } from '../../../llm/types.js';
import { collectLoop, handedCall, sseFrame, type Collector, type EncodeContext, type StreamEncoder } from '../chat-protocol.js';
import { openAiErrorBody, type ErrorOut } from '../errors-out.js';
import { renderEventText } from '../render-text.js';

/**
 * Loop events as OpenAI Chat Completions: `chat.completion.chunk` objects then `[DONE]`, or one
 * `chat.completion`. Every loop event but `text` also rides along as a `kiwi` field (on the
 * chunk that shows it, or at the top level as `kiwi.events`); OpenAI clients ignore fields they
 * do not know. Native calls of the client's own tools, and in resolve-only mode each `call`, are
 * `tool_calls`.
 */

const FINISH: Record<FinishReason, string> = { stop: 'stop', length: 'length', tool_calls: 'tool_calls', content_filter: 'content_filter', other: 'stop' };

/** `tool_calls` exactly when the client was handed native calls to run; a limit ends as a normal stop. */
function finishReason(reason: FinishReason, nativeCalls: number): string {
  if (nativeCalls > 0) return 'tool_calls';
  return reason === 'tool_calls' ? 'stop' : FINISH[reason];
}

function usageOf(usage: ChatUsage): { prompt_tokens: number; completion_tokens: number; total_tokens: number } {
  const prompt = usage.inputTokens ?? 0;
  const completion = usage.outputTokens ?? 0;
  return { prompt_tokens: prompt, completion_tokens: completion, total_tokens: prompt + completion };
}

function toolCall(call: NativeToolCall): { id: string; type: 'function'; function: { name: string; arguments: string } } {
  return { id: call.id, type: 'function', function: { name: call.name, arguments: call.arguments } };
}

export function createOpenAiStreamEncoder(ctx: EncodeContext): StreamEncoder {
  let id = `chatcmpl-${ctx.requestId}`;
  let model = ctx.model;
  const created = Math.floor(Date.now() / 1000);
  let started = false;
  let nativeCalls = 0;
  let finished = false;

  const chunk = (delta: Record<string, unknown>, kiwi?: LoopEvent, finish: string | null = null): string =>
    sseFrame({
      id,
      object: 'chat.completion.chunk',
      created,
      model,
      choices: [{ index: 0, delta, logprobs: null, finish_reason: finish }],
      ...(kiwi === undefined ? {} : { kiwi }),
    });

  function open(kiwi?: LoopEvent): string {
    started = true;
    return chunk({ role: 'assistant', content: '' }, kiwi);
  }

  return {
    get finished() {
      return finished;
    },
    push(event) {
      if (finished) return '';
      if (event.type === 'start') {
        id = event.id;
        model = event.model;
        return started ? chunk({}, event) : open(event);
      }
      const head = started ? '' : open();
      const handed = handedCall(event, ctx.mode);
      if (handed !== undefined) return head + chunk({ tool_calls: [{ index: nativeCalls++, ...toolCall(handed) }] }, event);
      switch (event.type) {
        case 'text':
          return event.text === '' ? head : head + chunk({ content: event.text });
        case 'finish': {
          finished = true;
          const usage = ctx.includeUsage ? sseFrame({ id, object: 'chat.completion.chunk', created, model, choices: [], usage: usageOf(event.usage) }) : '';
          return `${head}${chunk({}, event, finishReason(event.reason, nativeCalls))}${usage}${sseFrame('[DONE]')}`;
        }
        default:
          break;
      }
      const text = renderEventText(event, ctx.mode);
      return head + chunk(text === '' ? {} : { content: text }, event);
    },
    fail(out: ErrorOut) {
      finished = true;
      return sseFrame(openAiErrorBody(out));
    },
    keepAlive() {
      return ': keep-alive\n\n';
    },
  };
}

export function createOpenAiCollector(ctx: EncodeContext): Collector {
  const created = Math.floor(Date.now() / 1000);
  let content = '';
  const toolCalls: ReturnType<typeof toolCall>[] = [];
  const loop = collectLoop(ctx, `chatcmpl-${ctx.requestId}`, {
    text: (text) => (content += text),
    call: (call) => toolCalls.push(toolCall(call)),
  });
  return {
    push: loop.push,
    body() {
      const { id, model, events, finish } = loop.done();
      const message = {
        role: 'assistant',
        content: content === '' && toolCalls.length > 0 ? null : content,
        refusal: null,
        ...(toolCalls.length === 0 ? {} : { tool_calls: toolCalls }),
      };
      return {
        id,
        object: 'chat.completion',
        created,
        model,
        choices: [{ index: 0, message, logprobs: null, finish_reason: finishReason(finish.reason, toolCalls.length) }],
        usage: usageOf(finish.usage),
        kiwi: { events },
      };
    },
  };
}
