import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createAnthropicProvider } from '../../src/llm/anthropic-provider.js';
import { anthropicFinishReason } from '../../src/llm/anthropic-wire.js';
import { openAiFinishReason } from '../../src/llm/openai-wire.js';
import type { ChatProvider, ChatRequest } from '../../src/llm/types.js';
import { failure } from '../helpers/expect-failure.js';
import { loadRecording, startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { drain, streamFailure, textOf } from './collect-events.js';

const KEY = 'sk-ant-api03-T2hOb1RoaXNJc05vdEFSZWFsS2V5';
const ask: ChatRequest = { model: 'claude-sonnet-4-20250514', messages: [{ role: 'user', content: 'What is the capital of France?' }] };
const TOOL_TEXT = 'Let me look that up — one moment. [TOOL: search for enrichment scripts that use the Apollo API] I’ll report back.';

let llm: ReplayLlmServer;
let provider: ChatProvider;

beforeEach(async () => {
  llm = await startReplayLlmServer();
  provider = createAnthropicProvider({ baseUrl: llm.url, apiKey: KEY });
});

afterEach(async () => {
  await provider.close();
  await llm.close();
});

function sse(body: string) {
  return { recording: { status: 200, headers: { 'content-type': 'text/event-stream; charset=utf-8' }, body } };
}

describe('Anthropic provider: streaming', () => {
  it('streams a recorded answer: message_start → start, text deltas, message_delta → finish; ping ignored', async () => {
    llm.reply('anthropic-plain');
    const { events, error } = await drain(provider.stream(ask));
    expect(error).toBeUndefined();
    expect(events).toEqual([
      { type: 'start', id: 'msg_01XFDUDYJgAACzvnptvVoYEL', model: 'claude-sonnet-4-20250514' },
      { type: 'text', text: 'The capital of France' },
      { type: 'text', text: ' is Paris.' },
      { type: 'finish', reason: 'stop', usage: { inputTokens: 21, outputTokens: 9 } },
    ]);
  });

  it('sends the Messages API request: x-api-key, anthropic-version, top-level system, max_tokens default', async () => {
    llm.reply('anthropic-plain');
    const extra = { metadata: { user_id: 'u-1' }, top_k: 5, system: 'ignored', max_tokens: 1, stream: false };
    await drain(
      provider.stream({
        model: 'claude-sonnet-4-20250514',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi' },
          { role: 'system', content: 'Answer in English.' },
          { role: 'assistant', content: '[TOOL: look up the weather]' },
          { role: 'tool', content: '{"temp": 21}', toolCallId: 'toolu_01' },
        ],
        temperature: 0.5,
        stop: ['###'],
        extra,
      }),
    );
    const seen = llm.requests[0];
    expect(seen?.method).toBe('POST');
    expect(seen?.path).toBe('/v1/messages');
    expect(seen?.headers['x-api-key']).toBe(KEY);
    expect(seen?.headers['anthropic-version']).toBe('2023-06-01');
    expect(seen?.headers.authorization).toBeUndefined();
    expect(seen?.headers.accept).toBe('text/event-stream');
    expect(seen?.body).toEqual({
      model: 'claude-sonnet-4-20250514',
      system: 'Be brief.\n\nAnswer in English.',
      messages: [
        { role: 'user', content: 'Hi' },
        { role: 'assistant', content: '[TOOL: look up the weather]' },
        { role: 'user', content: '{"temp": 21}' },
      ],
      max_tokens: 4096,
      temperature: 0.5,
      stop_sequences: ['###'],
      stream: true,
      metadata: { user_id: 'u-1' },
      top_k: 5,
    });
  });

  it('sends the given max_tokens and version, and accepts a baseUrl ending in /v1', async () => {
    llm.reply('anthropic-plain');
    const custom = createAnthropicProvider({ baseUrl: `${llm.url}/v1/`, apiKey: KEY, version: '2024-01-01' });
    await drain(custom.stream({ ...ask, maxTokens: 100 }));
    await custom.close();
    const seen = llm.requests[0];
    expect(seen?.path).toBe('/v1/messages');
    expect(seen?.headers['anthropic-version']).toBe('2024-01-01');
    expect(seen?.body).toMatchObject({ max_tokens: 100 });
    expect(seen?.body).not.toHaveProperty('system');
  });

  it('keeps an intent split across deltas and characters split across writes intact, counting cached input', async () => {
    llm.reply({ recording: 'anthropic-tool-intent', splitBytes: 5 });
    const { events, error } = await drain(provider.stream(ask));
    expect(error).toBeUndefined();
    expect(events.filter((e) => e.type === 'text').map((e) => (e.type === 'text' ? e.text : ''))).toContain(' moment. [TO');
    expect(textOf(events)).toBe(TOOL_TEXT);
    expect(events.at(-1)).toEqual({ type: 'finish', reason: 'stop', usage: { inputTokens: 58 + 1024, outputTokens: 27 } });
  });

  it('maps stop_reason max_tokens to length', async () => {
    llm.reply('anthropic-max-tokens');
    const { events } = await drain(provider.stream(ask));
    expect(textOf(events)).toBe('Here are the first three steps: 1. Install');
    expect(events.at(-1)).toMatchObject({ type: 'finish', reason: 'length', usage: { outputTokens: 10 } });
  });

  it('ends a stream cut before message_delta with finish "other"', async () => {
    llm.reply({ recording: 'anthropic-plain', endAfterChunks: 4 });
    const { events, error } = await drain(provider.stream(ask));
    expect(error).toBeUndefined();
    expect(textOf(events)).toBe('The capital of France');
    expect(events.at(-1)).toEqual({ type: 'finish', reason: 'other', usage: { inputTokens: 21, outputTokens: 1 } });
  });

  it('ignores thinking and tool-input deltas and event types it does not know', async () => {
    const body = loadRecording('anthropic-plain').body.replace(
      'event: content_block_start\n',
      [
        'event: content_block_start\ndata: {"type":"content_block_start","index":0,"content_block":{"type":"thinking","thinking":""}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"thinking_delta","thinking":"The user asks…"}}\n\n',
        'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"input_json_delta","partial_json":"{\\"q\\":"}}\n\n',
        'event: future_event\ndata: {"type":"future_event","anything":[1,2]}\n\n',
        'event: content_block_start\n',
      ].join(''),
    );
    llm.reply(sse(body));
    const { events, error } = await drain(provider.stream(ask));
    expect(error).toBeUndefined();
    expect(textOf(events)).toBe('The capital of France is Paris.');
  });

  it('maps every stop reason', () => {
    expect(['end_turn', 'stop_sequence', 'max_tokens', 'tool_use', 'refusal', 'pause_turn'].map(anthropicFinishReason)).toEqual(['stop', 'stop', 'length', 'tool_calls', 'content_filter', 'other']);
    expect(['stop', 'length', 'tool_calls', 'function_call', 'content_filter', 'eos'].map(openAiFinishReason)).toEqual(['stop', 'length', 'tool_calls', 'tool_calls', 'content_filter', 'other']);
  });
});

describe('Anthropic provider: complete', () => {
  it('returns the whole message from a non-streaming call', async () => {
    llm.reply('anthropic-complete');
    const result = await provider.complete(ask);
    expect(result).toEqual({
      id: 'msg_01EcyWo6m4hyW8KHs2y2pei5',
      model: 'claude-sonnet-4-20250514',
      text: 'The capital of France is Paris.',
      finish: { type: 'finish', reason: 'stop', usage: { inputTokens: 21, outputTokens: 10 } },
    });
    expect(llm.requests[0]?.body).toMatchObject({ stream: false, max_tokens: 4096 });
    expect(llm.requests[0]?.headers.accept).toBe('application/json');
  });

  it('refuses a 200 body that is not a message', async () => {
    llm.reply({ recording: { status: 200, headers: { 'content-type': 'application/json' }, body: '{"id":"msg_1","content":"text"}' } });
    expect((await failure(provider.complete(ask), 'UPSTREAM_HTTP')).message).toContain('not an Anthropic message (model:');
  });
});

describe('Anthropic provider: upstream errors', () => {
  const cases = [
    { recording: 'anthropic-401', status: 401, type: 'authentication_error', says: 'invalid x-api-key', requestId: 'req_011CR6p5Jw3PyZm8UaX6cK9t' },
    { recording: 'anthropic-429', status: 429, type: 'rate_limit_error', says: 'This request would exceed the rate limit', requestId: 'req_011CR6p4Hq2NwXk7TzV5bJ8s' },
    { recording: 'anthropic-500', status: 500, type: 'api_error', says: 'Internal server error', requestId: 'req_011CR6p6Ke4QzAn9VbY7dL0u' },
  ];

  for (const c of cases) {
    it(`maps ${c.status} to UPSTREAM_HTTP with the error type, message and request id, streaming and not`, async () => {
      llm.reply(c.recording);
      const { error } = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
      expect(error.details).toMatchObject({ status: c.status, type: c.type, provider: 'anthropic', requestId: c.requestId });
      expect(error.message).toContain(`answered ${c.status} ${c.type}: ${c.says}`);
      const again = await failure(provider.complete(ask), 'UPSTREAM_HTTP');
      expect(again.details).toMatchObject({ status: c.status, type: c.type });
    });
  }

  it('passes retry-after on from a non-streaming 429', async () => {
    llm.reply('anthropic-429');
    expect((await failure(provider.complete(ask), 'UPSTREAM_HTTP')).details).toMatchObject({ retryAfter: '23' });
  });

  it('throws UPSTREAM_HTTP for an error event mid-stream, with the status its type stands for', async () => {
    llm.reply('anthropic-error-midstream');
    const { events, error } = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
    expect(textOf(events)).toBe('Sure, here is the summary:');
    expect(error.details).toMatchObject({ status: 529, midStream: true, type: 'overloaded_error' });
    expect(error.message).toContain('overloaded_error: Overloaded');
  });

  it('names the event that is not JSON or not the documented shape', async () => {
    llm.reply('anthropic-malformed-event');
    const { events, error } = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
    expect(textOf(events)).toBe('The capital');
    expect(error.details).toMatchObject({ chunk: 5, malformed: true });
    expect(error.message).toContain('event 5 of the stream does not have the shape of a content_block_delta event (delta:');
    llm.reply(sse('event: message_start\ndata: {"type":"message_start","message":{"id":"msg_1"\n\n'));
    expect((await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP')).error.message).toContain('event 1 of the stream is not valid JSON: {"type":"message_start"');
    llm.reply(sse('event: message_start\ndata: {"kind":"message_start"}\n\n'));
    expect((await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP')).error.message).toContain('is not an Anthropic stream event (type:');
    llm.reply(sse('event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta"}}\n\n'));
    expect((await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP')).error.message).toContain('is a text_delta without a string `text`');
  });

  it('redacts the API key when an upstream echoes it', async () => {
    llm.reply({ status: 401, body: JSON.stringify({ type: 'error', error: { type: 'authentication_error', message: `invalid x-api-key: ${KEY}` } }) });
    const { error } = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
    expect(error.message).toContain('invalid x-api-key: [redacted]');
    expect(JSON.stringify([error.message, error.details])).not.toContain(KEY);
  });
});

describe('Anthropic provider: aborts and bad input', () => {
  it('aborts mid-stream with TOOL_CANCELLED and closes the upstream socket', async () => {
    llm.reply({ recording: 'anthropic-plain', stallAfterChunks: 3 });
    const controller = new AbortController();
    const it = provider.stream(ask, controller.signal)[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ type: 'start' });
    const pending = it.next();
    controller.abort();
    await failure(pending, 'TOOL_CANCELLED');
    expect(await llm.requests[0]?.closed).toBe('cut');
  });

  it('times out a stalled stream with HTTP_TIMEOUT', async () => {
    const slow = createAnthropicProvider({ baseUrl: llm.url, apiKey: KEY, timeoutMs: 1000 });
    llm.reply({ recording: 'anthropic-plain', stallAfterChunks: 4 });
    const { events } = await streamFailure(slow.stream(ask), 'HTTP_TIMEOUT');
    await slow.close();
    expect(textOf(events)).toBe('The capital of France');
    expect(await llm.requests[0]?.closed).toBe('cut');
  });

  it('refuses a response over maxResponseBytes with OUTPUT_TOO_LARGE', async () => {
    const capped = createAnthropicProvider({ baseUrl: llm.url, apiKey: KEY, maxResponseBytes: 500 });
    llm.reply('anthropic-plain');
    await streamFailure(capped.stream(ask), 'OUTPUT_TOO_LARGE');
    await capped.close();
  });

  it('refuses a request with only system messages, before sending anything', async () => {
    const only: ChatRequest = { model: 'claude-sonnet-4-20250514', messages: [{ role: 'system', content: 'Be brief.' }] };
    expect((await streamFailure(provider.stream(only), 'INVALID_INPUT')).error.message).toContain('at least one user or assistant message');
    await failure(provider.complete(only), 'INVALID_INPUT');
    expect(llm.requests).toHaveLength(0);
  });

  it('refuses bad options with INVALID_INPUT', () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ baseUrl: llm.url }, 'invalid option apiKey: is required'],
      [{ baseUrl: llm.url, apiKey: '' }, 'invalid option apiKey'],
      [{ baseUrl: llm.url, apiKey: KEY, version: 'latest' }, 'version: must be a date'],
      [{ baseUrl: 'file:///etc', apiKey: KEY }, 'must be http: or https:'],
    ];
    for (const [options, says] of bad) {
      expect(() => createAnthropicProvider(options as never), says).toThrow(says);
    }
  });
});
