import { KiwiError } from '../../../base/errors.js';
import type { LoopEvent, LoopEventOf } from '../../../loop/loop-types.js';
import type { NativeToolCall } from '../../../llm/types.js';
import { collectLoop, handedCall, MAX_COLLECTED_CHARS, sseFrame, type Collector, type EncodeContext, type StreamEncoder } from '../chat-protocol.js';
import { openAiErrorType, type ErrorOut } from '../errors-out.js';
import { renderEventText } from '../render-text.js';
import { createOutputItems, finishStatus, outputText, responseObject, type ResponseParts } from './responses-output.js';

/**
 * Loop events as the OpenAI Responses API: a stream of typed events (`response.created`, the
 * output items with their text deltas, `response.completed`), or one `response` object. A
 * loop event that shows as text rides as a `kiwi` field on the delta that shows it (in
 * resolve-only mode a `call` rides on its `function_call` item); every structured event is in
 * the final response's `kiwi.events`. No event type of our own is sent: the SDK's stream
 * helper refuses event types it does not know.
 */

export function createResponsesStreamEncoder(ctx: EncodeContext): StreamEncoder {
  let id = `resp_${ctx.requestId}`;
  let model = ctx.model;
  const createdAt = Math.floor(Date.now() / 1000);
  const output = createOutputItems(() => id);
  const events: LoopEvent[] = [];
  let sequence = 0;
  let held = 0;
  let started = false;
  let finished = false;

  const frame = (type: string, fields: Record<string, unknown>): string => sseFrame({ type, sequence_number: sequence++, ...fields }, type);
  const snapshot = (parts: Partial<ResponseParts> & Pick<ResponseParts, 'status'>): Record<string, unknown> =>
    responseObject({ id, createdAt, model, output: output.items, ...parts });
  // The final events repeat the whole answer, so it is held, and capped like a non-streamed one.
  const hold = (chars: number): void => {
    held += chars;
    if (held > MAX_COLLECTED_CHARS) throw new KiwiError('OUTPUT_TOO_LARGE', `The answer grew past ${MAX_COLLECTED_CHARS} characters, more than the gateway holds for one response; ask for a shorter answer`);
  };

  function open(): string {
    started = true;
    const response = snapshot({ status: 'in_progress' });
    return frame('response.created', { response }) + frame('response.in_progress', { response });
  }

  function text(delta: string, kiwi?: LoopEvent): string {
    hold(delta.length);
    const { item, index, opened } = output.text(delta);
    const head = opened
      ? frame('response.output_item.added', { output_index: index, item: { ...item, content: [] } }) +
        frame('response.content_part.added', { item_id: item.id, output_index: index, content_index: 0, part: outputText('') })
      : '';
    const where = { item_id: item.id, output_index: index, content_index: 0 };
    return head + frame('response.output_text.delta', { ...where, delta, logprobs: [], ...(kiwi === undefined ? {} : { kiwi }) });
  }

  function closeText(): string {
    const closed = output.closeText();
    if (closed === undefined) return '';
    const { item, index } = closed;
    const part = item.content[0] ?? outputText('');
    const where = { item_id: item.id, output_index: index, content_index: 0 };
    return (
      frame('response.output_text.done', { ...where, text: part.text, logprobs: [] }) +
      frame('response.content_part.done', { ...where, part }) +
      frame('response.output_item.done', { output_index: index, item })
    );
  }

  function call(handed: NativeToolCall, event: LoopEvent): string {
    const head = closeText();
    const { item, index } = output.call(handed);
    hold(item.arguments.length);
    const where = { item_id: item.id, output_index: index };
    return (
      head +
      frame('response.output_item.added', { output_index: index, item: { ...item, status: 'in_progress', arguments: '' }, kiwi: event }) +
      frame('response.function_call_arguments.delta', { ...where, delta: item.arguments }) +
      frame('response.function_call_arguments.done', { ...where, name: item.name, arguments: item.arguments }) +
      frame('response.output_item.done', { output_index: index, item })
    );
  }

  function finish(event: LoopEventOf<'finish'>): string {
    finished = true;
    const { status, incomplete } = finishStatus(event);
    const closing = closeText();
    return closing + frame(status === 'completed' ? 'response.completed' : 'response.incomplete', { response: snapshot({ status, incomplete, usage: event.usage, events }) });
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
      }
      const head = started ? '' : open();
      if (event.type === 'text') return event.text === '' ? head : head + text(event.text);
      hold(JSON.stringify(event).length);
      events.push(event);
      if (event.type === 'finish') return head + finish(event);
      const handed = handedCall(event, ctx.mode);
      if (handed !== undefined) return head + call(handed, event);
      const shown = renderEventText(event, ctx.mode);
      return shown === '' ? head : head + text(shown, event);
    },
    fail(out: ErrorOut) {
      finished = true;
      const code = out.code ?? out.type ?? openAiErrorType(out.status);
      const last = output.items.at(-1);
      if (last?.type === 'message' && last.status === 'in_progress') last.status = 'incomplete';
      // The SDK's stream helper builds its snapshot from response.created: a failure is never the first event.
      const head = started ? '' : open();
      return (
        head +
        frame('error', { code, message: out.message, param: out.param ?? null }) +
        frame('response.failed', { response: snapshot({ status: 'failed', error: { code, message: out.message }, events }) })
      );
    },
    keepAlive() {
      return ': keep-alive\n\n';
    },
  };
}

export function createResponsesCollector(ctx: EncodeContext): Collector {
  const createdAt = Math.floor(Date.now() / 1000);
  let id = `resp_${ctx.requestId}`;
  const output = createOutputItems(() => id);
  const loop = collectLoop(ctx, id, {
    text: (text) => void output.text(text),
    call: (handed) => void output.call(handed),
  });
  return {
    push(event) {
      if (event.type === 'start') id = event.id;
      loop.push(event);
    },
    body() {
      const done = loop.done();
      output.closeText();
      const { status, incomplete } = finishStatus(done.finish);
      return responseObject({ id: done.id, createdAt, model: done.model, status, incomplete, output: output.items, usage: done.finish.usage, events: done.events });
    },
  };
}
