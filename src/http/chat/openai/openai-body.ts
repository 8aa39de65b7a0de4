import { z } from 'zod';
import type { ChatMessage, ChatRequest, ClientTools, NativeToolCall } from '../../../llm/types.js';
import { badField, bodyIssue, MEDIA_PARTS, mediaPart, parseErrors, unknownPart } from '../body-error.js';
import type { ParsedChat } from '../chat-protocol.js';
import { isNativeCallId, openAiToolFields, readOpenAiTools } from '../client-tools-body.js';
import { calledText, resultText } from '../history-text.js';

/**
 * Reads an OpenAI Chat Completions request body into a ChatRequest. Loose for fields we do not
 * read (the whole body travels on as `extra`), strict for the ones we do: a wrong type there is
 * a 400 naming the field, never a silent default.
 */

const part = z.looseObject({ type: z.string() });
const content = z.union([z.string(), z.array(part)], { error: 'must be a string or an array of content parts' });
const name = z.string().min(1).max(256);

const toolCall = z.looseObject({
  id: z.string().nullish(),
  function: z.looseObject({ name: z.string().min(1), arguments: z.string() }),
});

const message = z.looseObject({
  role: z.enum(['system', 'developer', 'user', 'assistant', 'tool', 'function']),
  content: content.nullish(),
  name: name.nullish(),
  tool_calls: z.array(toolCall).nullish(),
  tool_call_id: z.string().nullish(),
});

const body = z.looseObject({
  model: z.string().min(1).max(512),
  messages: z.array(message).min(1, 'give at least one message'),
  stream: z.boolean().nullish(),
  stream_options: z.looseObject({ include_usage: z.boolean().nullish() }).nullish(),
  max_tokens: z.number().int().positive().nullish(),
  max_completion_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(2).nullish(),
  stop: z.union([z.string().min(1), z.array(z.string().min(1)).max(16)], { error: 'must be a non-empty string or an array of up to 16 of them' }).nullish(),
  n: z.number().int().min(1).max(1, 'the gateway returns one choice: leave n out or set it to 1').nullish(),
  ...openAiToolFields,
});

type Message = z.output<typeof message>;

/** The text of a content field; a media part is refused rather than dropped, so the user knows. */
function contentText(value: Message['content'], path: string, refusals: boolean): string {
  if (value === null || value === undefined) return '';
  if (typeof value === 'string') return value;
  const texts: string[] = [];
  value.forEach((p, i) => {
    const at = `${path}[${i}]`;
    if (p.type === 'text') {
      if (typeof p.text !== 'string') throw badField(`${at}.text`, 'must be a string');
      texts.push(p.text);
    } else if (p.type === 'refusal' && refusals) {
      if (typeof p.refusal !== 'string') throw badField(`${at}.refusal`, 'must be a string');
      texts.push(p.refusal);
    } else if (MEDIA_PARTS.has(p.type)) {
      throw mediaPart(at, p.type);
    } else {
      throw unknownPart(at, p.type, 'text parts ({"type": "text", "text": "…"})');
    }
  });
  return texts.join('\n');
}

function toMessages(messages: Message[], clientTools: ClientTools | undefined): ChatMessage[] {
  // Tool results name the call they answer by id; the upstream reads the tool's name instead.
  const callNames = new Map<string, string>();
  const nativeIds = new Set<string>();
  return messages.map((m, i): ChatMessage => {
    const path = `messages[${i}].content`;
    const named = typeof m.name === 'string' ? { name: m.name } : {};
    switch (m.role) {
      case 'system':
      case 'developer':
        return { role: 'system', content: contentText(m.content, path, false), ...named };
      case 'user':
        return { role: 'user', content: contentText(m.content, path, false), ...named };
      case 'assistant': {
        const native: NativeToolCall[] = [];
        const calls = (m.tool_calls ?? []).map((c) => {
          if (isNativeCallId(c.id, clientTools)) {
            nativeIds.add(c.id);
            native.push({ id: c.id, name: c.function.name, arguments: c.function.arguments });
            return '';
          }
          if (typeof c.id === 'string') callNames.set(c.id, c.function.name);
          return calledText(c.function.name, c.function.arguments);
        });
        const text = [contentText(m.content, path, true), ...calls].filter((t) => t !== '').join('\n');
        return { role: 'assistant', content: text, ...named, ...(native.length > 0 ? { toolCalls: native } : {}) };
      }
      case 'tool': {
        const content = contentText(m.content, path, false);
        if (typeof m.tool_call_id === 'string' && nativeIds.has(m.tool_call_id)) return { role: 'tool', content, toolCallId: m.tool_call_id };
        const called = typeof m.tool_call_id === 'string' ? callNames.get(m.tool_call_id) : undefined;
        return { role: 'tool', content: resultText(called, content) };
      }
      case 'function':
        // The deprecated form of a tool result: it names its function itself.
        return { role: 'tool', content: resultText(typeof m.name === 'string' ? m.name : undefined, contentText(m.content, path, false)) };
    }
  });
}

export function parseOpenAiChat(input: unknown): ParsedChat {
  const parsed = body.safeParse(input, parseErrors);
  if (!parsed.success) throw bodyIssue(parsed.error, 'chat completions');
  const b = parsed.data;
  const maxTokens = b.max_completion_tokens ?? b.max_tokens;
  const stop = typeof b.stop === 'string' ? [b.stop] : b.stop;
  const clientTools = readOpenAiTools(b);
  const request: ChatRequest = {
    model: b.model,
    messages: toMessages(b.messages, clientTools),
    ...(typeof maxTokens === 'number' ? { maxTokens } : {}),
    ...(typeof b.temperature === 'number' ? { temperature: b.temperature } : {}),
    ...(Array.isArray(stop) && stop.length > 0 ? { stop } : {}),
    ...(clientTools === undefined ? {} : { clientTools }),
    extra: input as Record<string, unknown>,
  };
  return { request, stream: b.stream === true, includeUsage: b.stream_options?.include_usage === true };
}
