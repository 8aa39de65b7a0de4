import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createOpenAiProvider } from '../../src/llm/openai-provider.js';
import type { ChatProvider, ChatRequest } from '../../src/llm/types.js';
import { createHttpClient } from '../../src/primitives/http-client.js';
import { failure } from '../helpers/expect-failure.js';
import { startReplayLlmServer, type ReplayLlmServer } from '../helpers/replay-llm-server.js';
import { drain, streamFailure, textOf } from './collect-events.js';

const KEY = 'sk-test-Qm9vQmFyQmF6MTIzNDU2Nzg5MA';
const ask: ChatRequest = { model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'What is the capital of France?' }] };
const TOOL_TEXT = 'Let me look that up — one moment. [TOOL: search for enrichment scripts that use the Apollo API] I’ll report back.';

let llm: ReplayLlmServer;
let provider: ChatProvider;

beforeEach(async () => {
  llm = await startReplayLlmServer();
  provider = createOpenAiProvider({ baseUrl: `${llm.url}/v1`, apiKey: KEY });
});

afterEach(async () => {
  await provider.close();
  await llm.close();
});

/** An inline event stream, for shapes no recording holds. */
function sse(body: string) {
  return { recording: { status: 200, headers: { 'content-type': 'text/event-stream' }, body } };
}

describe('OpenAI provider: streaming', () => {
  it('streams a recorded answer: one start, the text deltas, one finish with reason and usage', async () => {
    llm.reply('openai-plain');
    const { events, error } = await drain(provider.stream(ask));
    expect(error).toBeUndefined();
    expect(events[0]).toEqual({ type: 'start', id: 'chatcmpl-B9yq4cY1bYJ0s3lZ9mXkQ2rT7uVwA', model: 'gpt-4o-mini-2024-07-18' });
    expect(events.filter((e) => e.type === 'text')).toHaveLength(7);
    expect(textOf(events)).toBe('The capital of France is Paris.');
    expect(events.at(-1)).toEqual({ type: 'finish', reason: 'stop', usage: { inputTokens: 24, outputTokens: 7 } });
    expect(events.filter((e) => e.type !== 'text').map((e) => e.type)).toEqual(['start', 'finish']);
  });

  it('joins the text deltas that arrive in one read into one text event, the order kept', async () => {
    const chunk = (delta: object, finish: string | null = null) => `data: ${JSON.stringify({ id: 'c1', model: 'm', choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
    const burst = [chunk({ role: 'assistant', content: '' }), chunk({ content: 'Par' }), chunk({ content: 'is ' }), chunk({ content: '[TOOL: x]' }), chunk({}, 'stop'), 'data: [DONE]\n\n'].join('');
    // One write: a fast server's burst, which the gateway reads at once (the replay server writes event by event).
    const server = http.createServer((req, res) => {
      req.resume();
      req.on('end', () => res.writeHead(200, { 'content-type': 'text/event-stream' }).end(burst));
    });
    server.listen(0, '127.0.0.1');
    await once(server, 'listening');
    const fast = createOpenAiProvider({ baseUrl: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1` });
    try {
      const { events, error } = await drain(fast.stream(ask));
      expect(error).toBeUndefined();
      expect(events).toEqual([{ type: 'start', id: 'c1', model: 'm' }, { type: 'text', text: 'Paris [TOOL: x]' }, { type: 'finish', reason: 'stop' }]);
    } finally {
      await fast.close();
      server.close();
    }
  });

  it('sends the request in the OpenAI format: path, headers, roles, limits, stream flags', async () => {
    llm.reply('openai-plain');
    const extra = JSON.parse('{"seed": 7, "user": "u-1", "response_format": {"type": "text"}, "model": "ignored", "stream": false, "messages": [], "__proto__": {"polluted": true}}') as Record<string, unknown>;
    await drain(
      provider.stream({
        model: 'gpt-4o-mini',
        messages: [
          { role: 'system', content: 'Be brief.' },
          { role: 'user', content: 'Hi', name: 'ada' },
          { role: 'assistant', content: '[TOOL: look up the weather]' },
          { role: 'tool', content: '{"temp": 21}' },
          { role: 'tool', content: '{"ok": true}', toolCallId: 'call_abc' },
        ],
        maxTokens: 256,
        temperature: 0.2,
        stop: ['\n\n'],
        extra,
      }),
    );
    const seen = llm.requests[0];
    expect(seen?.method).toBe('POST');
    expect(seen?.path).toBe('/v1/chat/completions');
    expect(seen?.headers.authorization).toBe(`Bearer ${KEY}`);
    expect(seen?.headers['content-type']).toBe('application/json');
    expect(seen?.headers.accept).toBe('text/event-stream');
    const body = seen?.body as Record<string, unknown>;
    expect(body).toMatchObject({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: 'Be brief.' },
        { role: 'user', content: 'Hi', name: 'ada' },
        { role: 'assistant', content: '[TOOL: look up the weather]' },
        { role: 'user', content: '{"temp": 21}' },
        // Its call is in no assistant message before it: OpenAI would refuse it as a tool message.
        { role: 'user', content: '{"ok": true}' },
      ],
      max_tokens: 256,
      temperature: 0.2,
      stop: ['\n\n'],
      stream: true,
      stream_options: { include_usage: true },
      seed: 7,
      user: 'u-1',
      response_format: { type: 'text' },
    });
    // The client's "__proto__" key travels as data and changes no prototype.
    expect(Object.hasOwn(body, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('leaves out what the request does not set, and the Authorization header without a key', async () => {
    llm.reply('openai-plain');
    const local = createOpenAiProvider({ baseUrl: `${llm.url}/v1/` });
    await drain(local.stream(ask));
    await local.close();
    const seen = llm.requests[0];
    expect(seen?.path).toBe('/v1/chat/completions');
    expect(seen?.headers.authorization).toBeUndefined();
    expect(Object.keys(seen?.body as object).sort()).toEqual(['messages', 'model', 'stream', 'stream_options']);
  });

  it('keeps an intent that is split across chunks, and characters split across writes, intact', async () => {
    llm.reply({ recording: 'openai-tool-intent', splitBytes: 7 });
    const { events, error } = await drain(provider.stream(ask));
    expect(error).toBeUndefined();
    const texts = events.flatMap((e) => (e.type === 'text' ? [e.text] : []));
    expect(texts).toContain('TOOL');
    expect(texts).toHaveLength(27);
    expect(textOf(events)).toBe(TOOL_TEXT);
    expect(events.at(-1)).toEqual({ type: 'finish', reason: 'stop', usage: { inputTokens: 61, outputTokens: 27 } });
  });

  it("reads llama.cpp's and Ollama's streams (no role chunk, timings, usage in different places)", async () => {
    llm.replyOnce('openai-llamacpp-plain', 'openai-ollama-plain');
    const llama = await drain(provider.stream(ask));
    expect(llama.events[0]).toEqual({ type: 'start', id: 'chatcmpl-hX7Jd0sM2kTqBvY9nR4wEoP1aLcZ8uGf', model: 'qwen2.5-7b-instruct-q4_k_m.gguf' });
    expect(textOf(llama.events)).toBe('Paris is the capital of France.');
    expect(llama.events.at(-1)).toEqual({ type: 'finish', reason: 'stop', usage: { inputTokens: 20, outputTokens: 8 } });
    const ollama = await drain(provider.stream(ask));
    expect(ollama.events[0]).toEqual({ type: 'start', id: 'chatcmpl-527', model: 'llama3.2' });
    expect(textOf(ollama.events)).toBe('Paris is the capital of France.');
    expect(ollama.events.at(-1)).toEqual({ type: 'finish', reason: 'stop', usage: { inputTokens: 31, outputTokens: 8 } });
  });

  it('reports finish_reason length', async () => {
    llm.reply('openai-length');
    const { events } = await drain(provider.stream(ask));
    expect(textOf(events)).toBe('Here are the first three steps: 1. Install');
    expect(events.at(-1)).toMatchObject({ type: 'finish', reason: 'length' });
  });

  it('ends a stream that stops without a finish_reason or [DONE] with finish "other"', async () => {
    llm.reply({ recording: 'openai-plain', endAfterChunks: 3 });
    const { events, error } = await drain(provider.stream(ask));
    expect(error).toBeUndefined();
    expect(events.map((e) => e.type)).toEqual(['start', 'text', 'text', 'finish']);
    expect(events.at(-1)).toEqual({ type: 'finish', reason: 'other' });
  });

  it('sends a start of its own when the server sent no chunk before [DONE]', async () => {
    llm.reply(sse('data: [DONE]\n\n'));
    const { events } = await drain(provider.stream(ask));
    expect(events).toEqual([
      { type: 'start', id: expect.stringMatching(/^chatcmpl-/) as unknown, model: 'gpt-4o-mini' },
      { type: 'finish', reason: 'other' },
    ]);
  });
});

describe('OpenAI provider: complete', () => {
  it('returns the whole answer from a non-streaming call', async () => {
    llm.reply('openai-complete');
    const result = await provider.complete({ ...ask, extra: { stream_options: { include_usage: true } } });
    expect(result).toEqual({
      id: 'chatcmpl-B9yuQ3wE4rT5yU6iO7pA8sD9fG0hJ',
      model: 'gpt-4o-mini-2024-07-18',
      text: 'The capital of France is Paris.',
      finish: { type: 'finish', reason: 'stop', usage: { inputTokens: 24, outputTokens: 7 } },
    });
    const seen = llm.requests[0];
    expect(seen?.headers.accept).toBe('application/json');
    expect(seen?.body).toMatchObject({ stream: false });
    // OpenAI refuses stream_options on a request that does not stream.
    expect(seen?.body).not.toHaveProperty('stream_options');
  });

  it('refuses a 200 body that is not a chat.completion', async () => {
    llm.reply({ recording: { status: 200, headers: { 'content-type': 'application/json' }, body: '{"object":"list","data":[]}' } });
    const error = await failure(provider.complete(ask), 'UPSTREAM_HTTP');
    expect(error.message).toContain('not a chat.completion (choices:');
    llm.reply({ recording: { status: 200, headers: { 'content-type': 'text/html' }, body: '<html>login</html>' } });
    expect((await failure(provider.complete(ask), 'UPSTREAM_HTTP')).message).toContain('not JSON: <html>login</html>');
  });
});

describe('OpenAI provider: upstream errors', () => {
  const cases = [
    { recording: 'openai-401', status: 401, type: 'invalid_request_error', says: 'Incorrect API key provided', hint: 'check the API key' },
    { recording: 'openai-429', status: 429, type: 'tokens', says: 'Rate limit reached for gpt-4o-mini', hint: 'rate limiting' },
    { recording: 'openai-500', status: 500, type: 'server_error', says: 'The server had an error', hint: 'retry later' },
  ];

  for (const c of cases) {
    it(`maps ${c.status} to UPSTREAM_HTTP with the provider's type and message, streaming and not`, async () => {
      llm.reply(c.recording);
      const { error, events } = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
      expect(events).toEqual([]);
      expect(error.details).toMatchObject({ status: c.status, type: c.type, provider: 'openai' });
      expect(error.message).toContain(`answered ${c.status} ${c.type}: ${c.says}`);
      expect(error.message).toContain(c.hint);
      const again = await failure(provider.complete(ask), 'UPSTREAM_HTTP');
      expect(again.details).toMatchObject({ status: c.status, type: c.type });
      expect(again.message).toContain(c.says);
    });
  }

  it('passes retry-after on from a non-streaming 429', async () => {
    llm.reply('openai-429');
    expect((await failure(provider.complete(ask), 'UPSTREAM_HTTP')).details).toMatchObject({ status: 429, code: 'rate_limit_exceeded', retryAfter: '1' });
  });

  it('passes Retry-After and retry-after-ms on from a streaming 429', async () => {
    llm.reply({ status: 429, headers: { 'retry-after': '7', 'retry-after-ms': '6500' } });
    const { error } = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
    expect(error.details).toMatchObject({ status: 429, retryAfter: '7', retryAfterMs: '6500' });
  });

  it('throws UPSTREAM_HTTP from the iterator for an error sent mid-stream, after the text before it', async () => {
    llm.reply('openai-error-midstream');
    const { events, error } = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
    expect(textOf(events)).toBe('Sure, here is the summary:');
    expect(error.details).toMatchObject({ status: 500, midStream: true, type: 'server_error' });
    expect(error.message).toContain('in the middle of the stream (event 9), server_error: The server had an error');
  });

  it("reads vLLM's flat error object mid-stream", async () => {
    llm.reply(sse('data: {"object":"error","message":"This model\'s maximum context length is 4096 tokens","type":"BadRequestError","param":null,"code":400}\n\n'));
    const { error } = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
    expect(error.message).toContain("BadRequestError: This model's maximum context length is 4096 tokens");
  });

  it('names the chunk that is not JSON, or not a chunk: loose schemas still reject garbage', async () => {
    llm.reply('openai-malformed-chunk');
    const broken = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
    expect(textOf(broken.events)).toBe('The');
    expect(broken.error.details).toMatchObject({ chunk: 3, malformed: true });
    expect(broken.error.message).toContain('event 3 of the stream is not valid JSON: {"id":"chatcmpl-B9yvZx1Cv2Bn3Mm4Aa5Ss6Dd7Ff8","object":"chat.completion.chunk","created":17417');
    llm.reply(sse('data: {"id":"chatcmpl-1","choices":"nope"}\n\n'));
    expect((await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP')).error.message).toContain('event 1 of the stream does not have the shape of a chat.completion.chunk (choices:');
    llm.reply(sse('data: {"id":"chatcmpl-1","choices":[{"index":0,"delta":{"content":42}}]}\n\n'));
    expect((await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP')).error.message).toContain('(choices.0.delta.content:');
    llm.reply(sse('data: 42\n\n'));
    expect((await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP')).error.message).toContain('event 1 of the stream does not have the shape');
  });

  it('refuses a 200 answer that is not an event stream', async () => {
    llm.reply('openai-complete');
    const { error } = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
    expect(error.message).toContain('instead of text/event-stream');
  });

  it('does not follow a redirect, so the key never goes to another host', async () => {
    llm.reply({ status: 307, headers: { location: 'http://127.0.0.2:1/v1/chat/completions' }, body: '' });
    const { error } = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
    expect(error.details).toMatchObject({ status: 307 });
    expect(error.message).toContain('redirects are not followed');
    expect(llm.requests).toHaveLength(1);
  });

  it('redacts the API key when an upstream echoes it', async () => {
    llm.reply({ status: 401, body: JSON.stringify({ error: { message: `Invalid API key ${KEY}`, type: 'authentication_error', code: 401 } }) });
    const { error } = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
    expect(error.message).toContain('Invalid API key [redacted]');
    expect(JSON.stringify([error.message, error.details])).not.toContain(KEY);
    const again = await failure(provider.complete(ask), 'UPSTREAM_HTTP');
    expect(JSON.stringify([again.message, again.details])).not.toContain(KEY);
    llm.reply(sse(`data: {"error":{"message":"key ${KEY} revoked","type":"invalid_request_error"}}\n\n`));
    const mid = await streamFailure(provider.stream(ask), 'UPSTREAM_HTTP');
    expect(JSON.stringify([mid.error.message, mid.error.details])).not.toContain(KEY);
  });
});

describe('OpenAI provider: stalls, aborts and caps', () => {
  it('times out a stalled stream with HTTP_TIMEOUT and closes the upstream connection', async () => {
    const slow = createOpenAiProvider({ baseUrl: `${llm.url}/v1`, timeoutMs: 1000 });
    llm.reply({ recording: 'openai-plain', stallAfterChunks: 3 });
    const { events, error } = await streamFailure(slow.stream(ask), 'HTTP_TIMEOUT');
    await slow.close();
    expect(textOf(events)).toBe('The capital');
    expect(error.details).toMatchObject({ phase: 'body', timeoutMs: 1000 });
    expect(await llm.requests[0]?.closed).toBe('cut');
  });

  it('aborts mid-stream with TOOL_CANCELLED and closes the upstream socket', async () => {
    llm.reply({ recording: 'openai-plain', stallAfterChunks: 2 });
    const controller = new AbortController();
    const it = provider.stream(ask, controller.signal)[Symbol.asyncIterator]();
    expect((await it.next()).value).toMatchObject({ type: 'start' });
    expect((await it.next()).value).toEqual({ type: 'text', text: 'The' });
    const pending = it.next();
    controller.abort();
    await failure(pending, 'TOOL_CANCELLED');
    expect(await llm.requests[0]?.closed).toBe('cut');
  });

  it('stops at once when the signal fires between reads, even with events already buffered', async () => {
    llm.reply('openai-plain');
    const controller = new AbortController();
    const seen: string[] = [];
    const run = (async () => {
      for await (const event of provider.stream(ask, controller.signal)) {
        seen.push(event.type);
        if (event.type === 'text') controller.abort();
      }
    })();
    await failure(run, 'TOOL_CANCELLED');
    expect(seen).toEqual(['start', 'text']);
  });

  it('sends nothing when the signal has already fired', async () => {
    llm.reply('openai-plain');
    await streamFailure(provider.stream(ask, AbortSignal.abort()), 'TOOL_CANCELLED');
    await failure(provider.complete(ask, AbortSignal.abort()), 'TOOL_CANCELLED');
    expect(llm.requests).toHaveLength(0);
  });

  it('closes the upstream connection when the consumer stops reading', async () => {
    llm.reply({ recording: 'openai-plain', stallAfterChunks: 3 });
    for await (const event of provider.stream(ask)) if (event.type === 'text') break;
    expect(await llm.requests[0]?.closed).toBe('cut');
  });

  it('refuses a response over maxResponseBytes with OUTPUT_TOO_LARGE', async () => {
    const capped = createOpenAiProvider({ baseUrl: `${llm.url}/v1`, maxResponseBytes: 600 });
    llm.reply('openai-plain');
    await streamFailure(capped.stream(ask), 'OUTPUT_TOO_LARGE');
    llm.reply('openai-complete');
    await failure(capped.complete(ask), 'OUTPUT_TOO_LARGE');
    await capped.close();
  });
});

describe('OpenAI provider: options and bad input', () => {
  it('refuses bad options with a clear INVALID_INPUT, never echoing the key', () => {
    const bad: [Record<string, unknown>, string][] = [
      [{ baseUrl: 'ftp://example.com/v1' }, 'must be http: or https:'],
      [{ baseUrl: 'not a url' }, 'is not an absolute URL'],
      [{ baseUrl: 'http://user:pw@127.0.0.1/v1' }, 'must not carry credentials'],
      [{ baseUrl: 'http://127.0.0.1/v1', apiKey: 'sk-secret\r\nx-evil: 1' }, 'invalid option apiKey'],
      [{ baseUrl: 'http://127.0.0.1/v1', timeoutMs: 0 }, 'invalid option timeoutMs'],
      [{ baseUrl: 'http://127.0.0.1/v1', maxResponseBytes: -1 }, 'invalid option maxResponseBytes'],
      [{ baseUrl: 'http://127.0.0.1/v1', http: {} }, 'must be an HttpClient'],
      [{}, 'invalid option baseUrl'],
      [{ baseUrl: 'http://127.0.0.1/v1', timeout: 5 }, 'Unrecognized key: "timeout"'],
    ];
    for (const [options, says] of bad) {
      let caught: unknown;
      try {
        createOpenAiProvider(options as never);
      } catch (error) {
        caught = error;
      }
      expect(caught, says).toMatchObject({ code: 'INVALID_INPUT' });
      expect((caught as Error).message).toContain(says);
      expect((caught as Error).message).not.toContain('sk-secret');
    }
  });

  it('refuses bad chat requests with INVALID_INPUT naming the field, before sending anything', async () => {
    llm.reply('openai-plain');
    const bad: [unknown, string][] = [
      [{ model: 'm', messages: [] }, 'messages: give at least one message'],
      [{ model: '', messages: ask.messages }, 'model:'],
      [{ model: 'm', messages: [{ role: 'robot', content: 'x' }] }, 'messages.0.role:'],
      [{ model: 'm', messages: [{ role: 'user' }] }, 'messages.0.content:'],
      [{ ...ask, maxTokens: 0 }, 'maxTokens:'],
      [{ ...ask, maxTokens: 1.5 }, 'maxTokens:'],
      [{ ...ask, temperature: 5 }, 'temperature:'],
      [{ ...ask, stop: [''] }, 'stop.0:'],
      [{ ...ask, extra: [] }, 'extra: must be a plain object'],
      [{ ...ask, tools: [] }, 'Unrecognized key'],
    ];
    for (const [request, says] of bad) {
      const { error } = await streamFailure(provider.stream(request as ChatRequest), 'INVALID_INPUT');
      expect(error.message).toContain(says);
      expect((await failure(provider.complete(request as ChatRequest), 'INVALID_INPUT')).message).toContain(says);
    }
    expect(llm.requests).toHaveLength(0);
  });

  it('fails with INTERNAL after close, and leaves an injected HTTP client open', async () => {
    const http = createHttpClient();
    const shared = createOpenAiProvider({ baseUrl: `${llm.url}/v1`, http });
    await shared.close();
    await streamFailure(shared.stream(ask), 'INTERNAL');
    await failure(shared.complete(ask), 'INTERNAL');
    llm.reply('openai-complete');
    expect((await http.request({ method: 'POST', url: `${llm.url}/v1/chat/completions`, body: '{}' })).status).toBe(200);
    await http.close();
  });
});
