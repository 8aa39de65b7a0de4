import type { Recording } from './replay-llm-server.js';

/** A native call the stream makes after its text: arguments sent in the given pieces. */
export interface StreamedToolCall {
  id: string;
  name: string;
  arguments: string[];
}

/**
 * An OpenAI chat-completion stream, as the API sends it, that writes `chunks` one delta each, then
 * any native `toolCalls`, then its usage (10 input and 5 output tokens unless told; `'none'`: no
 * usage chunk, as servers that ignore `stream_options.include_usage` send it).
 */
export function openAiStream(chunks: string[], options: { finish?: string; usage?: [input: number, output: number] | 'none'; toolCalls?: StreamedToolCall[] } = {}): Recording {
  const [input, output] = options.usage === 'none' ? [0, 0] : (options.usage ?? [10, 5]);
  const base = { id: 'chatcmpl-loop', object: 'chat.completion.chunk', created: 1741701751, model: 'upstream-model' };
  const delta = (d: unknown) => ({ ...base, choices: [{ index: 0, delta: d, finish_reason: null }], usage: null });
  const calls = (options.toolCalls ?? []).flatMap((c, index) => [
    delta({ tool_calls: [{ index, id: c.id, type: 'function', function: { name: c.name, arguments: '' } }] }),
    ...c.arguments.map((piece) => delta({ tool_calls: [{ index, function: { arguments: piece } }] })),
  ]);
  const events: unknown[] = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], usage: null },
    ...chunks.map((content) => delta({ content })),
    ...calls,
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: options.finish ?? (calls.length > 0 ? 'tool_calls' : 'stop') }], usage: null },
    ...(options.usage === 'none' ? [] : [{ ...base, choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } }]),
  ];
  const body = `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`;
  return { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, body };
}

/**
 * An OpenAI chat.completion (not streamed), as the API answers a side request the gateway makes
 * (the resolver's fallback model): one native call of `name(args)`, or text only.
 */
export function openAiCompletion(message: { name: string; args: unknown } | { content: string }, usage: [input: number, output: number] = [300, 20]): Recording {
  const msg =
    'content' in message
      ? { role: 'assistant', content: message.content }
      : { role: 'assistant', content: null, tool_calls: [{ id: 'call_side', type: 'function', function: { name: message.name, arguments: JSON.stringify(message.args) } }] };
  const body = { id: 'chatcmpl-side', object: 'chat.completion', created: 1765100000, model: 'upstream-model', choices: [{ index: 0, message: msg, finish_reason: 'content' in message ? 'stop' : 'tool_calls' }], usage: { prompt_tokens: usage[0], completion_tokens: usage[1], total_tokens: usage[0] + usage[1] } };
  return { status: 200, headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) };
}
