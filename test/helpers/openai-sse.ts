import type { Recording } from './replay-llm-server.js';

/** An OpenAI chat-completion stream, as the API sends it, that writes `chunks` one delta each. */
export function openAiStream(chunks: string[], options: { finish?: string; usage?: [input: number, output: number] } = {}): Recording {
  const [input, output] = options.usage ?? [10, 5];
  const base = { id: 'chatcmpl-loop', object: 'chat.completion.chunk', created: 1741701751, model: 'upstream-model' };
  const events: unknown[] = [
    { ...base, choices: [{ index: 0, delta: { role: 'assistant', content: '' }, finish_reason: null }], usage: null },
    ...chunks.map((content) => ({ ...base, choices: [{ index: 0, delta: { content }, finish_reason: null }], usage: null })),
    { ...base, choices: [{ index: 0, delta: {}, finish_reason: options.finish ?? 'stop' }], usage: null },
    { ...base, choices: [], usage: { prompt_tokens: input, completion_tokens: output, total_tokens: input + output } },
  ];
  const body = `${events.map((e) => `data: ${JSON.stringify(e)}\n\n`).join('')}data: [DONE]\n\n`;
  return { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, body };
}
