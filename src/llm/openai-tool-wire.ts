import type { ChatMessage, ClientTools } from './types.js';

/**
 * The client's tools and the native calls in its history, as OpenAI Chat Completions reads
 * them: `tools` / `tool_choice` / `parallel_tool_calls`, assistant `tool_calls`, and `tool`
 * messages answering them.
 */

export function openAiToolFields(ct: ClientTools | undefined): Record<string, unknown> {
  if (ct === undefined) return {};
  const tools = ct.tools.map((t) => ({
    type: 'function',
    function: { name: t.name, ...(t.description === undefined ? {} : { description: t.description }), parameters: t.parameters, ...(t.strict === undefined ? {} : { strict: t.strict }) },
  }));
  const choice = ct.choice;
  return {
    tools,
    ...(choice === undefined ? {} : { tool_choice: choice.type === 'tool' ? { type: 'function', function: { name: choice.name } } : choice.type }),
    ...(ct.parallel === undefined ? {} : { parallel_tool_calls: ct.parallel }),
  };
}

/**
 * OpenAI refuses a `tool` message anywhere but in the run right after the assistant message
 * whose `tool_calls` it answers. So that run holds the native answers only; every other tool
 * result (an intent's, or one whose call the history does not hold) goes up as user text,
 * after them.
 */
export function openAiMessages(messages: readonly ChatMessage[]): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (let i = 0; i < messages.length; i++) {
    const m = messages[i] as ChatMessage;
    const calls = m.role === 'assistant' ? (m.toolCalls ?? []) : [];
    if (calls.length === 0) {
      out.push(plain(m));
      continue;
    }
    out.push({
      role: 'assistant',
      content: m.content === '' ? null : m.content,
      ...(m.name === undefined ? {} : { name: m.name }),
      tool_calls: calls.map((c) => ({ id: c.id, type: 'function', function: { name: c.name, arguments: c.arguments } })),
    });
    const ids = new Set(calls.map((c) => c.id));
    const later: Record<string, unknown>[] = [];
    for (; messages[i + 1]?.role === 'tool'; i++) {
      const t = messages[i + 1] as ChatMessage;
      if (t.toolCallId !== undefined && ids.has(t.toolCallId)) out.push({ role: 'tool', content: t.isError === true ? `(the tool call failed)\n${t.content}` : t.content, tool_call_id: t.toolCallId });
      else later.push(plain(t));
    }
    out.push(...later);
  }
  return out;
}

function plain(m: ChatMessage): Record<string, unknown> {
  if (m.role === 'tool') return { role: 'user', content: m.content };
  return { role: m.role, content: m.content, ...(m.name === undefined ? {} : { name: m.name }) };
}
