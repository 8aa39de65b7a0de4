import type { LoopEvent, LoopEventOf } from '../../../loop/loop-types.js';
import type { ChatUsage, NativeToolCall } from '../../../llm/types.js';

/**
 * The pieces of an OpenAI Responses answer both the stream and the single response are built
 * from: output items (an assistant `message` holding `output_text`, a `function_call` in
 * resolve-only mode), the usage, and the `response` object itself. Fields the gateway does not
 * decide (sampling, tools echoed back) carry their "not set" values: the client reads them, and
 * a made-up echo would mislead it.
 */

export interface OutputText {
  type: 'output_text';
  text: string;
  annotations: never[];
  logprobs: never[];
}

export interface MessageItem {
  id: string;
  type: 'message';
  status: 'in_progress' | 'completed' | 'incomplete';
  role: 'assistant';
  content: OutputText[];
}

export interface CallItem {
  id: string;
  type: 'function_call';
  status: 'in_progress' | 'completed';
  call_id: string;
  name: string;
  arguments: string;
}

export type OutputItem = MessageItem | CallItem;

export type ResponseStatus = 'in_progress' | 'completed' | 'incomplete' | 'failed';

export function outputText(text: string): OutputText {
  return { type: 'output_text', text, annotations: [], logprobs: [] };
}

/** Output items in order: text goes into the open message, a call closes it and stands as its own item. */
export interface OutputItems {
  readonly items: OutputItem[];
  /** The message the text was added to, and whether this call opened it. */
  text(text: string): { item: MessageItem; index: number; opened: boolean };
  /** Ends the open message, if any, and returns it with its index. */
  closeText(): { item: MessageItem; index: number } | undefined;
  call(call: NativeToolCall): { item: CallItem; index: number };
}

export function createOutputItems(responseId: () => string): OutputItems {
  const items: OutputItem[] = [];
  let open: { item: MessageItem; index: number } | undefined;
  const itemId = (kind: string): string => `${kind}_${responseId()}_${items.length}`;
  return {
    items,
    text(text) {
      let opened = false;
      if (open === undefined) {
        open = { item: { id: itemId('msg'), type: 'message', status: 'in_progress', role: 'assistant', content: [outputText('')] }, index: items.length };
        items.push(open.item);
        opened = true;
      }
      const part = open.item.content[0] as OutputText;
      part.text += text;
      return { ...open, opened };
    },
    closeText() {
      const closed = open;
      open = undefined;
      if (closed !== undefined) closed.item.status = 'completed';
      return closed;
    },
    call(call) {
      this.closeText();
      const item: CallItem = { id: itemId('fc'), type: 'function_call', status: 'completed', call_id: call.id, name: call.name, arguments: call.arguments };
      items.push(item);
      return { item, index: items.length - 1 };
    },
  };
}

export function usageOf(usage: ChatUsage): Record<string, unknown> {
  const input = usage.inputTokens ?? 0;
  const output = usage.outputTokens ?? 0;
  return { input_tokens: input, input_tokens_details: { cached_tokens: 0 }, output_tokens: output, output_tokens_details: { reasoning_tokens: 0 }, total_tokens: input + output };
}

/** A length or content-filter stop is `incomplete` with its reason, as OpenAI reports it; anything else completed. */
export function finishStatus(finish: LoopEventOf<'finish'>): { status: 'completed' | 'incomplete'; incomplete: { reason: string } | null } {
  if (finish.reason === 'length') return { status: 'incomplete', incomplete: { reason: 'max_output_tokens' } };
  if (finish.reason === 'content_filter') return { status: 'incomplete', incomplete: { reason: 'content_filter' } };
  return { status: 'completed', incomplete: null };
}

export interface ResponseParts {
  id: string;
  createdAt: number;
  model: string;
  status: ResponseStatus;
  output: readonly OutputItem[];
  usage?: ChatUsage;
  error?: { code: string; message: string };
  incomplete?: { reason: string } | null;
  /** The loop's structured events (all but text), for clients that read them; OpenAI clients ignore the field. */
  events?: readonly LoopEvent[];
}

export function responseObject(p: ResponseParts): Record<string, unknown> {
  return {
    id: p.id,
    object: 'response',
    created_at: p.createdAt,
    status: p.status,
    ...(p.status === 'completed' || p.status === 'incomplete' ? { completed_at: Math.floor(Date.now() / 1000) } : {}),
    error: p.error ?? null,
    incomplete_details: p.incomplete ?? null,
    instructions: null,
    max_output_tokens: null,
    metadata: {},
    model: p.model,
    output: p.output,
    parallel_tool_calls: true,
    temperature: null,
    tool_choice: 'auto',
    tools: [],
    top_p: null,
    store: false,
    ...(p.usage === undefined ? {} : { usage: usageOf(p.usage) }),
    ...(p.events === undefined ? {} : { kiwi: { events: p.events } }),
  };
}
