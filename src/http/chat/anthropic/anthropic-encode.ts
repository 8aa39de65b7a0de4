import type { LoopEvent } from '../../../loop/loop-types.js';
import { argumentsObject } from '../../../llm/client-tools.js';
import type { ChatUsage, FinishReason, NativeToolCall } from '../../../llm/types.js';
import { collectLoop, handedCall, sseFrame, type Collector, type EncodeContext, type StreamEncoder } from '../chat-protocol.js';
import { anthropicErrorBody, type ErrorOut } from '../errors-out.js';
import { renderEventText } from '../render-text.js';

/**
 * Loop events as Anthropic Messages: message_start, content blocks (text, and tool_use for
 * native calls of the client's tools and, in resolve-only mode, for resolved intents), message_delta, message_stop; or one `message`. Every loop event but
 * `text` is also sent as its own SSE event named `kiwi` (data `{"type":"kiwi","event":…}`), or
 * at the top level as `kiwi.events`. Anthropic documents that clients must tolerate event types
 * they do not know. @anthropic-ai/sdk does not drop them by name: raw iteration of
 * `messages.create({stream: true})` yields them as `{type: 'kiwi', …}` (which is why the data is
 * JSON with a `type`: the SDK parses every event but ping and error), and `messages.stream()`
 * / `finalMessage()` pass them by (tested).
 */

const STOP: Record<FinishReason, string> = { stop: 'end_turn', length: 'max_tokens', tool_calls: 'end_turn', content_filter: 'refusal', other: 'end_turn' };

function stopReason(reason: FinishReason, toolUses: number): string {
  return toolUses > 0 ? 'tool_use' : STOP[reason];
}

function usageOf(usage: ChatUsage): { input_tokens: number; output_tokens: number } {
  return { input_tokens: usage.inputTokens ?? 0, output_tokens: usage.outputTokens ?? 0 };
}

function toolUse(call: NativeToolCall): { type: 'tool_use'; id: string; name: string; input: Record<string, unknown> } {
  return { type: 'tool_use', id: call.id, name: call.name, input: argumentsObject(call.arguments) };
}

const kiwiFrame = (event: LoopEvent): string => sseFrame({ type: 'kiwi', event }, 'kiwi');

export function createAnthropicStreamEncoder(ctx: EncodeContext): StreamEncoder {
  let id = `msg_${ctx.requestId}`;
  let model = ctx.model;
  let started = false;
  let index = -1;
  let openBlock: 'text' | undefined;
  let toolUses = 0;
  let finished = false;

  const frame = (data: Record<string, unknown>): string => sseFrame(data, String(data.type));

  function open(): string {
    started = true;
    const message = { id, type: 'message', role: 'assistant', model, content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } };
    return frame({ type: 'message_start', message });
  }

  function close(): string {
    if (openBlock === undefined) return '';
    openBlock = undefined;
    return frame({ type: 'content_block_stop', index });
  }

  function text(t: string): string {
    if (t === '') return '';
    let out = '';
    if (openBlock !== 'text') {
      out += close();
      index += 1;
      openBlock = 'text';
      out += frame({ type: 'content_block_start', index, content_block: { type: 'text', text: '' } });
    }
    return out + frame({ type: 'content_block_delta', index, delta: { type: 'text_delta', text: t } });
  }

  function tool(call: NativeToolCall): string {
    const out = close();
    index += 1;
    toolUses += 1;
    const use = toolUse(call);
    return (
      out +
      frame({ type: 'content_block_start', index, content_block: { ...use, input: {} } }) +
      frame({ type: 'content_block_delta', index, delta: { type: 'input_json_delta', partial_json: JSON.stringify(use.input) } }) +
      frame({ type: 'content_block_stop', index })
    );
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
        return (started ? '' : open()) + kiwiFrame(event);
      }
      const head = started ? '' : open();
      const handed = handedCall(event, ctx.mode);
      if (handed !== undefined) return head + kiwiFrame(event) + tool(handed);
      switch (event.type) {
        case 'text':
          return head + text(event.text);
        case 'finish':
          finished = true;
          return (
            head +
            close() +
            kiwiFrame(event) +
            frame({ type: 'message_delta', delta: { stop_reason: stopReason(event.reason, toolUses), stop_sequence: null }, usage: usageOf(event.usage) }) +
            frame({ type: 'message_stop' })
          );
        default:
          break;
      }
      return head + kiwiFrame(event) + text(renderEventText(event, ctx.mode));
    },
    fail(out: ErrorOut) {
      finished = true;
      return sseFrame(anthropicErrorBody(out), 'error');
    },
    keepAlive() {
      return sseFrame({ type: 'ping' }, 'ping');
    },
  };
}

type Block = { type: 'text'; text: string } | ReturnType<typeof toolUse>;

export function createAnthropicCollector(ctx: EncodeContext): Collector {
  const content: Block[] = [];
  let toolUses = 0;
  const loop = collectLoop(ctx, `msg_${ctx.requestId}`, {
    text(text) {
      const last = content.at(-1);
      if (last?.type === 'text') last.text += text;
      else content.push({ type: 'text', text });
    },
    call(call) {
      toolUses += 1;
      content.push(toolUse(call));
    },
  });
  return {
    push: loop.push,
    body() {
      const { id, model, events, finish } = loop.done();
      return {
        id,
        type: 'message',
        role: 'assistant',
        model,
        content,
        stop_reason: stopReason(finish.reason, toolUses),
        stop_sequence: null,
        usage: usageOf(finish.usage),
        kiwi: { events },
      };
    },
  };
}
