import { describe, expect, it } from 'vitest';
import { parseAnthropicMessages } from '../../../src/http/chat/anthropic/anthropic-body.js';
import { pickMode } from '../../../src/http/chat/mode.js';
import { parseOpenAiChat } from '../../../src/http/chat/openai/openai-body.js';
import { failure } from '../../helpers/expect-failure.js';

/** How client bodies become the ChatRequest the loop gets. */

describe('OpenAI bodies', () => {
  it('maps roles, text parts, names and the sampling fields; the whole body is extra', () => {
    const body = {
      model: 'gpt-4o-mini',
      messages: [
        { role: 'developer', content: 'Be brief.' },
        { role: 'system', content: [{ type: 'text', text: 'Use tools.' }] },
        { role: 'user', name: 'ada', content: [{ type: 'text', text: 'Hello' }, { type: 'text', text: 'there' }] },
        { role: 'assistant', content: [{ type: 'refusal', refusal: 'I cannot.' }] },
        { role: 'function', name: 'lookup', content: '42' },
      ],
      max_tokens: 100,
      max_completion_tokens: 200,
      temperature: 0.5,
      stop: 'END',
      seed: 7,
      stream: true,
      stream_options: { include_usage: true },
    };
    const parsed = parseOpenAiChat(body);
    expect(parsed.stream).toBe(true);
    expect(parsed.includeUsage).toBe(true);
    expect(parsed.request).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'system', content: 'Use tools.' },
        { role: 'user', content: 'Hello\nthere', name: 'ada' },
        { role: 'assistant', content: 'I cannot.' },
        { role: 'tool', content: '(result of lookup)\n42' },
      ],
      maxTokens: 200,
      temperature: 0.5,
      stop: ['END'],
      extra: body,
    });
  });

  it('renders assistant tool calls beside its text; a tool result for an unknown call stays plain text', () => {
    const { request } = parseOpenAiChat({
      model: 'm',
      messages: [
        {
          role: 'assistant',
          content: 'Reading both.',
          tool_calls: [
            { id: 'a', type: 'function', function: { name: 'read_file', arguments: '{"path":"a"}' } },
            { id: 'b', type: 'function', function: { name: 'list_dir', arguments: '{}' } },
          ],
        },
        { role: 'tool', tool_call_id: 'b', content: [{ type: 'text', text: 'x.txt' }] },
        { role: 'tool', tool_call_id: 'zzz', content: 'orphan' },
      ],
    });
    expect(request.messages).toEqual([
      { role: 'assistant', content: 'Reading both.\n(called read_file {"path":"a"})\n(called list_dir {})' },
      { role: 'tool', content: '(result of list_dir)\nx.txt' },
      { role: 'tool', content: 'orphan' },
    ]);
    expect(request.messages.every((m) => m.toolCallId === undefined)).toBe(true);
  });

  it('leaves out what the client left out', () => {
    const { request, stream, includeUsage } = parseOpenAiChat({ model: 'm', messages: [{ role: 'user', content: 'hi' }], stop: null, temperature: null });
    expect(request).toEqual({ model: 'm', messages: [{ role: 'user', content: 'hi' }], extra: { model: 'm', messages: [{ role: 'user', content: 'hi' }], stop: null, temperature: null } });
    expect(stream).toBe(false);
    expect(includeUsage).toBe(false);
  });
});

describe('Anthropic bodies', () => {
  it('maps system blocks, content blocks, max_tokens, temperature and stop_sequences', () => {
    const body = {
      model: 'claude',
      system: [
        { type: 'text', text: 'Be brief.', cache_control: { type: 'ephemeral' } },
        { type: 'text', text: 'Use tools.' },
      ],
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: [{ type: 'thinking', thinking: 'hmm', signature: 's' }, { type: 'text', text: 'Hello!' }] },
      ],
      max_tokens: 300,
      temperature: 0.2,
      stop_sequences: ['###'],
      metadata: { user_id: 'u1' },
    };
    expect(parseAnthropicMessages(body).request).toEqual({
      model: 'claude',
      messages: [
        { role: 'system', content: 'Be brief.\nUse tools.' },
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: 'Hello!' },
      ],
      maxTokens: 300,
      temperature: 0.2,
      stop: ['###'],
      extra: body,
    });
  });

  it('a failed tool_result and a string result read as text; a bad tool_result content is a 400', async () => {
    const { request } = parseAnthropicMessages({
      model: 'claude',
      messages: [
        { role: 'assistant', content: [{ type: 'tool_use', id: 't1', name: 'run', input: { cmd: ['ls'] } }] },
        { role: 'user', content: [{ type: 'tool_result', tool_use_id: 't1', is_error: true, content: 'ls: denied' }] },
      ],
    });
    expect(request.messages).toEqual([
      { role: 'assistant', content: '(called run {"cmd":["ls"]})' },
      { role: 'tool', content: '(run failed)\nls: denied' },
    ]);
    const bad = await failure(
      Promise.resolve().then(() => parseAnthropicMessages({ model: 'c', messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: 5 }] }] })),
      'INVALID_INPUT',
    );
    expect(bad.message).toBe('messages[0].content[0].content must be a string or an array of text blocks');
    const image = await failure(
      Promise.resolve().then(() => parseAnthropicMessages({ model: 'c', messages: [{ role: 'user', content: [{ type: 'tool_result', tool_use_id: 't', content: [{ type: 'image' }] }] }] })),
      'INVALID_INPUT',
    );
    expect(image.message).toContain('forwards text only');
  });
});

describe('pickMode', () => {
  it('defaults to execute; a suffix picks the mode and is stripped; the header wins', () => {
    expect(pickMode(undefined, 'gpt')).toEqual({ mode: 'execute', model: 'gpt' });
    expect(pickMode(undefined, 'gpt+resolve-only')).toEqual({ mode: 'resolve-only', model: 'gpt' });
    expect(pickMode(undefined, 'gpt+execute')).toEqual({ mode: 'execute', model: 'gpt' });
    expect(pickMode('execute', 'gpt+resolve-only')).toEqual({ mode: 'execute', model: 'gpt' });
    expect(pickMode(' resolve-only ', 'gpt')).toEqual({ mode: 'resolve-only', model: 'gpt' });
    // Only a known suffix is a mode: other plus signs belong to the model name.
    expect(pickMode(undefined, 'org/model+v2')).toEqual({ mode: 'execute', model: 'org/model+v2' });
  });

  it('refuses an unknown header value and a model that is only a suffix', async () => {
    await failure(Promise.resolve().then(() => pickMode('fast', 'gpt')), 'INVALID_INPUT');
    await failure(Promise.resolve().then(() => pickMode(undefined, '+execute')), 'INVALID_INPUT');
  });
});
