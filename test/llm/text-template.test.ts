import { describe, expect, it } from 'vitest';
import { createOpenAiDecoder } from '../../src/llm/openai-wire.js';
import { learnTextTemplate } from '../../src/llm/text-template.js';
import type { ChatEvent } from '../../src/llm/types.js';
import type { UpstreamContext } from '../../src/llm/upstream-error.js';

const chunk = (content: string, extra: Record<string, unknown> = {}) =>
  JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 7, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { content }, logprobs: null, finish_reason: null }], ...extra });

describe('text template', () => {
  const template = learnTextTemplate(chunk('Hello'), 'Hello')!;

  it('reads the text of a chunk that differs from the learned one only in its text', () => {
    expect(template.textOf(chunk(' world'))).toBe(' world');
    expect(template.textOf(chunk(''))).toBe('');
    expect(template.textOf(chunk('grüß 👋 [TOOL: x]'))).toBe('grüß 👋 [TOOL: x]');
  });

  it('leaves to the parser any text with an escape, and any other shape', () => {
    for (const text of ['say "hi"', 'back\\slash', 'two\nlines', 'tab\there']) expect(template.textOf(chunk(text))).toBeUndefined();
    expect(template.textOf(chunk('x').replace('"x"', '"\\u0078"'))).toBeUndefined();
    expect(template.textOf(chunk('x').replace('chatcmpl-1', 'chatcmpl-2'))).toBeUndefined();
    expect(template.textOf(chunk('x', { usage: { prompt_tokens: 1, completion_tokens: 2 } }))).toBeUndefined();
    expect(template.textOf(chunk('x').replace('"finish_reason":null', '"finish_reason":"stop"'))).toBeUndefined();
    expect(template.textOf('[DONE]')).toBeUndefined();
  });

  it('learns nothing when the text is not where one `"content":` literal says', () => {
    expect(learnTextTemplate(chunk('gpt-4o-mini').replace('"model":"gpt-4o-mini"', '"model":"x","content":"gpt-4o-mini"'), 'gpt-4o-mini')).toBeUndefined();
    expect(learnTextTemplate(chunk('x').replace('"content":"x"', '"content": "x"'), 'x')).toBeUndefined();
    expect(learnTextTemplate(chunk('é').replace('"é"', '"\\u00e9"'), 'é')).toBeUndefined();
  });
});

describe('the OpenAI decoder with templates', () => {
  const ctx: UpstreamContext = { provider: 'openai', label: 'test upstream', url: 'http://127.0.0.1/v1/chat/completions', model: 'm', redact: (s) => s };

  it('reads a stream with texts of every kind to the same events as parsing each chunk would', () => {
    const texts = ['', 'Hel', 'lo', ' "quoted"', ' back\\slash', '\nline', ' ü👋', '[TOOL: read', ' it]', '', 'end'];
    const frames = [
      JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 7, model: 'gpt-4o-mini', choices: [{ index: 0, delta: { role: 'assistant', content: '' }, logprobs: null, finish_reason: null }] }),
      ...texts.map((t) => chunk(t)),
      chunk('').replace('"finish_reason":null', '"finish_reason":"stop"'),
      JSON.stringify({ id: 'chatcmpl-1', object: 'chat.completion.chunk', created: 7, model: 'gpt-4o-mini', choices: [], usage: { prompt_tokens: 3, completion_tokens: 9 } }),
      '[DONE]',
    ];
    const decoder = createOpenAiDecoder(ctx);
    const events: ChatEvent[] = [];
    let done = false;
    frames.forEach((data, i) => {
      const out = decoder.push({ event: 'message', data }, i + 1);
      events.push(...out.events);
      done = out.done;
    });
    expect(done).toBe(true);
    expect(events.filter((e) => e.type === 'text').map((e) => (e as { text: string }).text)).toEqual(texts.filter((t) => t !== ''));
    expect(decoder.finish()).toEqual({ type: 'finish', reason: 'stop', usage: { inputTokens: 3, outputTokens: 9 } });
  });

  it('still refuses a chunk that is not JSON after a template was learned', () => {
    const decoder = createOpenAiDecoder(ctx);
    decoder.push({ event: 'message', data: chunk('a') }, 1);
    expect(() => decoder.push({ event: 'message', data: chunk('b').replace('"b"', '"b\u0001"') }, 2)).toThrow(/event 2 of the stream.*not valid JSON/);
  });
});
