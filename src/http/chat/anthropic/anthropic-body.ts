import { z } from 'zod';
import type { ChatMessage, ChatRequest, ClientTools } from '../../../llm/types.js';
import { badField, bodyIssue, MEDIA_PARTS, mediaPart, parseErrors, unknownPart } from '../body-error.js';
import type { ParsedChat } from '../chat-protocol.js';
import { anthropicToolFields, isNativeCallId, readAnthropicTools } from '../client-tools-body.js';
import { calledText, resultText } from '../history-text.js';

/**
 * Reads an Anthropic Messages request body into a ChatRequest: `system` (a string or text
 * blocks) becomes the first message; `tool_use` and `tool_result` blocks of the client's own
 * tools stay native calls and results, those of the gateway's calls (resolve-only mode) become
 * text the upstream can read; thinking blocks are the client's record
 * of the model's reasoning and are not sent back. Loose for unknown fields, strict for ours.
 */

const block = z.looseObject({ type: z.string() });
const blocks = z.union([z.string(), z.array(block)], { error: 'must be a string or an array of content blocks' });

const message = z.looseObject({
  role: z.enum(['user', 'assistant']),
  content: blocks,
});

const body = z.looseObject({
  model: z.string().min(1).max(512),
  messages: z.array(message).min(1, 'give at least one message'),
  system: blocks.nullish(),
  stream: z.boolean().nullish(),
  max_tokens: z.number().int().positive().nullish(),
  temperature: z.number().min(0).max(1).nullish(),
  stop_sequences: z.array(z.string().min(1)).max(16).nullish(),
  ...anthropicToolFields,
});

type Block = z.output<typeof block>;

const TEXT_ONLY = 'text blocks ({"type": "text", "text": "…"})';
const SKIPPED = new Set(['thinking', 'redacted_thinking']);

function blockText(b: Block, at: string): string {
  if (typeof b.text !== 'string') throw badField(`${at}.text`, 'must be a string');
  return b.text;
}

/** Text from a string or text-only blocks (system, tool_result content). */
function plainText(value: string | Block[], path: string): string {
  if (typeof value === 'string') return value;
  return value
    .map((b, i) => {
      const at = `${path}[${i}]`;
      if (b.type === 'text') return blockText(b, at);
      if (MEDIA_PARTS.has(b.type)) throw mediaPart(at, b.type);
      throw unknownPart(at, b.type, TEXT_ONLY);
    })
    .join('\n');
}

function toolUseText(b: Block, at: string): { id: string | undefined; name: string; args: string; text: string } {
  if (typeof b.name !== 'string' || b.name === '') throw badField(`${at}.name`, 'must be the tool name');
  const args = JSON.stringify(b.input ?? {});
  return { id: typeof b.id === 'string' ? b.id : undefined, name: b.name, args, text: calledText(b.name, args) };
}

function toolResult(b: Block, at: string, callNames: Map<string, string>, nativeIds: Set<string>): ChatMessage {
  const content = blocks.safeParse(b.content ?? '');
  if (!content.success) throw badField(`${at}.content`, 'must be a string or an array of text blocks');
  const parts = plainText(content.data, `${at}.content`);
  const id = b.tool_use_id;
  if (typeof id === 'string' && nativeIds.has(id)) return { role: 'tool', content: parts, toolCallId: id, ...(b.is_error === true ? { isError: true } : {}) };
  const called = typeof id === 'string' ? callNames.get(id) : undefined;
  return { role: 'tool', content: resultText(called, parts, b.is_error === true) };
}

function toMessages(messages: z.output<typeof message>[], clientTools: ClientTools | undefined): ChatMessage[] {
  const out: ChatMessage[] = [];
  const callNames = new Map<string, string>();
  const nativeIds = new Set<string>();
  messages.forEach((m, i) => {
    const path = `messages[${i}].content`;
    if (typeof m.content === 'string') {
      out.push({ role: m.role, content: m.content });
      return;
    }
    // A user turn may hold tool results and text; each result becomes its own tool message, in order.
    let texts: string[] = [];
    const native: NonNullable<ChatMessage['toolCalls']> = [];
    const flush = () => {
      if (texts.length > 0 || native.length > 0) out.push({ role: m.role, content: texts.join('\n'), ...(native.length > 0 ? { toolCalls: native.splice(0) } : {}) });
      texts = [];
    };
    m.content.forEach((b, j) => {
      const at = `${path}[${j}]`;
      if (b.type === 'text') texts.push(blockText(b, at));
      else if (b.type === 'tool_use' && m.role === 'assistant') {
        const use = toolUseText(b, at);
        if (isNativeCallId(use.id, clientTools)) {
          nativeIds.add(use.id);
          native.push({ id: use.id, name: use.name, arguments: use.args });
        } else {
          if (use.id !== undefined) callNames.set(use.id, use.name);
          texts.push(use.text);
        }
      } else if (b.type === 'tool_result' && m.role === 'user') {
        flush();
        out.push(toolResult(b, at, callNames, nativeIds));
      } else if (SKIPPED.has(b.type)) {
        // not forwarded
      } else if (MEDIA_PARTS.has(b.type)) throw mediaPart(at, b.type);
      else throw unknownPart(at, b.type, `${TEXT_ONLY}${m.role === 'assistant' ? ' or tool_use' : ' or tool_result'} blocks`);
    });
    flush();
  });
  return out;
}

export function parseAnthropicMessages(input: unknown): ParsedChat {
  const parsed = body.safeParse(input, parseErrors);
  if (!parsed.success) throw bodyIssue(parsed.error, 'messages');
  const b = parsed.data;
  const system = b.system === null || b.system === undefined ? '' : plainText(b.system, 'system');
  const clientTools = readAnthropicTools(b);
  const request: ChatRequest = {
    model: b.model,
    messages: [...(system === '' ? [] : [{ role: 'system' as const, content: system }]), ...toMessages(b.messages, clientTools)],
    ...(typeof b.max_tokens === 'number' ? { maxTokens: b.max_tokens } : {}),
    ...(typeof b.temperature === 'number' ? { temperature: b.temperature } : {}),
    ...(Array.isArray(b.stop_sequences) && b.stop_sequences.length > 0 ? { stop: b.stop_sequences } : {}),
    ...(clientTools === undefined ? {} : { clientTools }),
    extra: input as Record<string, unknown>,
  };
  if (request.messages.every((m) => m.role === 'system')) {
    throw badField('messages', 'hold no text the gateway can forward (only thinking blocks?); send at least one text, tool_use or tool_result block');
  }
  return { request, stream: b.stream === true, includeUsage: false };
}
