import { argumentsObject } from './client-tools.js';
import type { ChatMessage, ClientTools } from './types.js';

/**
 * The client's tools and the native calls in its history, as Anthropic's Messages API reads
 * them: `tools` / `tool_choice`, assistant `tool_use` blocks, and the user message of
 * `tool_result` blocks answering them.
 */

export function anthropicToolFields(ct: ClientTools | undefined): Record<string, unknown> {
  if (ct === undefined) return {};
  const tools = ct.tools.map((t) => ({ name: t.name, ...(t.description === undefined ? {} : { description: t.description }), input_schema: t.parameters }));
  const choice = ct.choice ?? { type: 'auto' as const };
  const type = choice.type === 'required' ? 'any' : choice.type;
  // Anthropic has no top-level switch for parallel calls: it rides on tool_choice (not on `none`).
  const serial = ct.parallel === false && type !== 'none' ? { disable_parallel_tool_use: true } : {};
  const explicit = ct.choice !== undefined || ct.parallel === false;
  return { tools, ...(explicit ? { tool_choice: { type, ...(choice.type === 'tool' ? { name: choice.name } : {}), ...serial } } : {}) };
}

type Block = Record<string, unknown>;
export interface AnthropicMessage {
  role: 'user' | 'assistant';
  content: string | Block[];
}

/**
 * Anthropic has no `tool` role, and each `tool_use` must be answered by a `tool_result` block
 * in the very next message, before any text there. So the run of tool results after an
 * assistant message with native calls becomes one user message: the native answers first, then
 * every other result (an intent's) as text. Elsewhere a tool result goes up as user text.
 * `messages` holds no system message.
 */
export function anthropicMessages(messages: readonly ChatMessage[]): AnthropicMessage[] {
  const out: AnthropicMessage[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as ChatMessage;
    const calls = m.role === 'assistant' ? (m.toolCalls ?? []) : [];
    if (calls.length === 0) {
      out.push({ role: m.role === 'assistant' ? 'assistant' : 'user', content: m.content });
      continue;
    }
    const uses = calls.map((c) => ({ type: 'tool_use', id: c.id, name: c.name, input: argumentsObject(c.arguments) }));
    out.push({ role: 'assistant', content: [...(m.content === '' ? [] : [{ type: 'text', text: m.content }]), ...uses] });
    const ids = new Set(calls.map((c) => c.id));
    const results: Block[] = [];
    const texts: Block[] = [];
    for (; messages[i + 1]?.role === 'tool'; i++) {
      const t = messages[i + 1] as ChatMessage;
      if (t.toolCallId !== undefined && ids.has(t.toolCallId)) {
        results.push({ type: 'tool_result', tool_use_id: t.toolCallId, content: t.content, ...(t.isError === true ? { is_error: true } : {}) });
      } else if (t.content !== '') {
        texts.push({ type: 'text', text: t.content });
      }
    }
    if (results.length + texts.length > 0) out.push({ role: 'user', content: [...results, ...texts] });
  }
  return out;
}
