import { z } from 'zod';
import type { ChatMessage, ChatRequest, ClientTools, NativeToolCall } from '../../../llm/types.js';
import { badField, bodyIssue, MEDIA_PARTS, mediaPart, parseErrors, unknownPart } from '../body-error.js';
import type { ParsedChat } from '../chat-protocol.js';
import { isNativeCallId } from '../client-tools-body.js';
import { calledText, resultText } from '../history-text.js';
import { responsesClientTools } from './responses-tools.js';

/**
 * Reads an OpenAI Responses request body into a ChatRequest: `instructions` becomes the first
 * system message; `input` (a string, or message, `function_call` and `function_call_output`
 * items) becomes the messages. The gateway keeps no state between requests, so the fields that
 * point at stored state (`previous_response_id`, `conversation`, `prompt`, `item_reference`)
 * are refused with what to send instead, never ignored. Fields that only tune OpenAI's own
 * service (store, include, reasoning, truncation…) are accepted and not used.
 */

const body = z.looseObject({
  model: z.string().min(1).max(512),
  // Optional here only so that a missing input is told as missing, not as a union mismatch.
  input: z.union([z.string(), z.array(z.unknown()).min(1, 'give at least one input item')], {
    error: 'must be a string or an array of input items ({"role": "user", "content": "…"})',
  }).optional(),
  instructions: z.string().nullish(),
  stream: z.boolean().nullish(),
  max_output_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  top_p: z.number().min(0).max(1).nullish(),
  background: z.boolean().nullish(),
});

const item = z.looseObject({ type: z.string().optional(), role: z.string().optional() });
const part = z.looseObject({ type: z.string() });

/** Fields that name state the gateway does not keep, with what to send instead. */
const STATEFUL: [field: string, instead: string][] = [
  ['previous_response_id', 'send the whole conversation as input items'],
  ['conversation', 'send the whole conversation as input items'],
  ['prompt', 'send the prompt text as instructions and input'],
];

const TEXT_PARTS = 'text parts ({"type": "input_text", "text": "…"})';

/** Text from a content field: a string or text parts; media is refused rather than dropped, so the user knows. */
function contentText(value: unknown, path: string, assistant: boolean): string {
  if (typeof value === 'string') return value;
  if (!Array.isArray(value)) throw badField(path, 'must be a string or an array of content parts');
  return value
    .map((raw, i) => {
      const at = `${path}[${i}]`;
      const p = part.safeParse(raw);
      if (!p.success) throw badField(`${at}.type`, 'is required: each content part names its type');
      const { type } = p.data;
      if (type === 'input_text' || type === 'output_text' || type === 'text') {
        if (typeof p.data.text !== 'string') throw badField(`${at}.text`, 'must be a string');
        return p.data.text;
      }
      if (type === 'refusal' && assistant) {
        if (typeof p.data.refusal !== 'string') throw badField(`${at}.refusal`, 'must be a string');
        return p.data.refusal;
      }
      if (MEDIA_PARTS.has(type)) throw mediaPart(at, type);
      throw unknownPart(at, type, TEXT_PARTS);
    })
    .join('\n');
}

function stringField(value: Record<string, unknown>, key: string, at: string, problem: string): string {
  const v = value[key];
  if (typeof v !== 'string' || v === '') throw badField(`${at}.${key}`, problem);
  return v;
}

const ROLES: Record<string, ChatMessage['role']> = { user: 'user', system: 'system', developer: 'system', assistant: 'assistant' };

/**
 * The items as messages. An assistant's text and the calls it made arrive as separate items;
 * they go up as one assistant message, as the chat edges send them. A call's output names the
 * call by id; the upstream reads the tool's name instead.
 */
function toMessages(items: unknown[], clientTools: ClientTools | undefined): ChatMessage[] {
  const messages: ChatMessage[] = [];
  const callNames = new Map<string, string>();
  const nativeIds = new Set<string>();
  const assistant = (text: string, call?: NativeToolCall): void => {
    if (text === '' && call === undefined) return;
    let last = messages.at(-1);
    if (last?.role !== 'assistant') {
      last = { role: 'assistant', content: '' };
      messages.push(last);
    }
    if (text !== '') last.content = last.content === '' ? text : `${last.content}\n${text}`;
    if (call !== undefined) last.toolCalls = [...(last.toolCalls ?? []), call];
  };
  items.forEach((raw, i) => {
    const at = `input[${i}]`;
    const parsed = item.safeParse(raw);
    if (!parsed.success) throw badField(at, 'must be an input item object ({"role": "user", "content": "…"})');
    const it = parsed.data;
    const type = it.type ?? 'message';
    switch (type) {
      case 'message': {
        const role = typeof it.role === 'string' ? ROLES[it.role] : undefined;
        if (role === undefined) throw badField(`${at}.role`, 'must be "user", "assistant", "system" or "developer"');
        const text = contentText(it.content, `${at}.content`, role === 'assistant');
        if (role === 'assistant') assistant(text);
        else messages.push({ role, content: text });
        return;
      }
      case 'function_call': {
        const name = stringField(it, 'name', at, 'must be the name of the function called');
        const args = typeof it.arguments === 'string' ? it.arguments : '{}';
        // A call of the client's own tools goes up as the upstream's native call; the gateway's own (resolve-only) as text.
        const callId = typeof it.call_id === 'string' ? it.call_id : undefined;
        if (isNativeCallId(callId, clientTools)) {
          nativeIds.add(callId);
          assistant('', { id: callId, name, arguments: args });
          return;
        }
        if (callId !== undefined) callNames.set(callId, name);
        assistant(calledText(name, args));
        return;
      }
      case 'function_call_output': {
        const callId = stringField(it, 'call_id', at, 'must be the call_id of the function_call this output answers');
        const output = contentText(it.output, `${at}.output`, false);
        messages.push(nativeIds.has(callId) ? { role: 'tool', content: output, toolCallId: callId } : { role: 'tool', content: resultText(callNames.get(callId), output) });
        return;
      }
      case 'reasoning':
        // The client's record of the model's reasoning: not sent back up, as with Anthropic thinking blocks.
        return;
      case 'item_reference':
        throw badField(`${at}.type`, 'is "item_reference"; the gateway keeps no items: send the item itself');
      default:
        throw badField(`${at}.type`, `is "${type.slice(0, 64)}", which the gateway does not read; send messages, function_call and function_call_output items`);
    }
  });
  return messages;
}

export function parseOpenAiResponses(input: unknown): ParsedChat {
  const parsed = body.safeParse(input, parseErrors);
  if (!parsed.success) throw bodyIssue(parsed.error, 'responses');
  const b = parsed.data;
  for (const [field, instead] of STATEFUL) {
    const value = (b as Record<string, unknown>)[field];
    if (value !== undefined && value !== null) throw badField(field, `is given, but the gateway keeps no responses or conversations: ${instead}`);
  }
  if (b.input === undefined) throw badField('input', 'is required in a responses body: give the conversation as a string or an array of input items');
  if (b.background === true) throw badField('background', 'is true; the gateway answers while the client waits: leave it out and stream instead');

  const clientTools = responsesClientTools(b);
  const messages: ChatMessage[] = typeof b.input === 'string' ? [{ role: 'user', content: b.input }] : toMessages(b.input, clientTools);
  if (typeof b.instructions === 'string' && b.instructions !== '') messages.unshift({ role: 'system', content: b.instructions });
  if (messages.length === 0) throw badField('input', 'holds no message the upstream can read; give at least one message');
  // Chat Completions fields only: the Responses body itself must not reach an upstream.
  const extra = typeof b.top_p === 'number' ? { top_p: b.top_p } : {};
  const request: ChatRequest = {
    model: b.model,
    messages,
    ...(typeof b.max_output_tokens === 'number' ? { maxTokens: b.max_output_tokens } : {}),
    ...(typeof b.temperature === 'number' ? { temperature: b.temperature } : {}),
    extra,
    ...(clientTools ? { clientTools } : {}),
  };
  return { request, stream: b.stream === true, includeUsage: false };
}
