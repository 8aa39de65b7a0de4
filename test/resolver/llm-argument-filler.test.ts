import { once } from 'node:events';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHttpClient } from '../../src/primitives/http-client.js';
import type { ToolParameter } from '../../src/registry/types.js';
import { createLlmArgumentFiller, functionName, parametersSchema, type LlmArgumentFiller, type LlmArgumentFillerOptions } from '../../src/resolver/llm-argument-filler.js';
import { recorded, replay, startReplayServer, type ReplayServer } from '../fixtures/llm/replay-server.js';
import { failure } from '../helpers/expect-failure.js';
import { makeTool } from '../helpers/make-tool.js';

// The server REPLAYS recorded-shape chat completions (test/fixtures/llm/*.json): no model can run here.

const PARAMS: ToolParameter[] = [
  { name: 'city', type: 'string', required: true, description: 'City name, e.g. Lisbon' },
  { name: 'days', type: 'integer', required: false, description: 'How many days ahead' },
  { name: 'units', type: 'string', required: true, enum: ['metric', 'imperial'], default: 'metric' },
  { name: 'sources', type: 'array', required: false, items: { type: 'string' } },
];
const weather = makeTool({ id: 'weather_forecast', description: 'Weather forecast for a city', mutatesState: false, parameters: PARAMS });
const INTENT = 'what will the weather be in Lisbon over the next 5 days';

let server: ReplayServer;
const closers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  server = await startReplayServer();
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await server.close();
});

function make(options: Partial<LlmArgumentFillerOptions> = {}): LlmArgumentFiller {
  const filler = createLlmArgumentFiller({ url: server.url, model: 'gpt-4o-mini', ...options });
  closers.push(() => filler.close());
  return filler;
}

/** The openai-tool-call recording with other arguments (and optionally another function name). */
function toolCallWith(args: string, name = 'weather_forecast'): string {
  const body = JSON.parse(recorded('openai-tool-call'));
  body.choices[0].message.tool_calls[0].function = { name, arguments: args };
  return JSON.stringify(body);
}

function contentReply(content: string): string {
  const body = JSON.parse(recorded('llamacpp-content-json'));
  body.choices[0].message.content = content;
  return JSON.stringify(body);
}

describe('LLM argument filler: the request', () => {
  it('POSTs an OpenAI chat request with the tool as a forced function, and no Authorization without a key', async () => {
    const result = await make().fill(INTENT, weather);
    expect(server.seen).toHaveLength(1);
    const seen = server.seen[0]!;
    expect(seen.method).toBe('POST');
    expect(seen.path).toBe('/v1/chat/completions');
    expect(seen.headers['content-type']).toBe('application/json');
    expect(seen.headers.authorization).toBeUndefined();
    expect(seen.body).toEqual({
      model: 'gpt-4o-mini',
      messages: [
        { role: 'system', content: "Fill the arguments of the function from the user's request. Use only values stated in the request; leave out optional arguments the request does not give." },
        { role: 'user', content: INTENT },
      ],
      tools: [
        {
          type: 'function',
          function: {
            name: 'weather_forecast',
            description: 'Weather forecast for a city',
            parameters: {
              type: 'object',
              properties: {
                city: { type: 'string', description: 'City name, e.g. Lisbon' },
                days: { type: 'integer', description: 'How many days ahead' },
                units: { type: 'string', enum: ['metric', 'imperial'], default: 'metric' },
                sources: { type: 'array', items: { type: 'string' } },
              },
              required: ['city', 'units'],
              additionalProperties: false,
            },
          },
        },
      ],
      tool_choice: { type: 'function', function: { name: 'weather_forecast' } },
      temperature: 0,
      stream: false,
    });
    expect(result.arguments).toEqual({ city: 'Lisbon', days: 5, units: 'metric' });
  });

  it('sends the API key as a Bearer token, and the context labelled after the request', async () => {
    await make({ apiKey: 'sk-test-123' }).fill('the same for Porto', weather, { context: 'user: how is the weather in Lisbon?' });
    const seen = server.seen[0]!;
    expect(seen.headers.authorization).toBe('Bearer sk-test-123');
    const messages = (seen.body as { messages: { role: string; content: string }[] }).messages;
    expect(messages[1]).toEqual({
      role: 'user',
      content: 'Request: the same for Porto\n\nConversation context (only for values the request refers to):\nuser: how is the weather in Lisbon?',
    });
  });

  it('appends /chat/completions to a base ending in /v1 and keeps a full endpoint as given', async () => {
    await make({ url: `${server.url}/v1` }).fill(INTENT, weather);
    await make({ url: `${server.url}/api/chat/completions` }).fill(INTENT, weather);
    expect(server.seen.map((s) => s.path)).toEqual(['/v1/chat/completions', '/api/chat/completions']);
  });

  it('names the function with characters OpenAI accepts when the tool id has dots', async () => {
    const tool = makeTool({ id: 'files.read_file', parameters: [{ name: 'path', type: 'string', required: true }] });
    expect(functionName('files.read_file')).toBe('files_read_file');
    server.answer = replay(toolCallWith('{"path":"README.md"}', 'files_read_file'));
    const result = await make().fill('read README.md', tool);
    const body = server.seen[0]!.body as { tool_choice: unknown };
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: 'files_read_file' } });
    expect(result.arguments).toEqual({ path: 'README.md' });
  });

  it('keeps a parameter called __proto__ as a property of the schema', () => {
    const schema = parametersSchema([{ name: '__proto__', type: 'string', required: true }]);
    expect(JSON.parse(JSON.stringify(schema)).properties).toEqual({ ['__proto__']: { type: 'string' } });
  });

  it('asks nothing for a tool without parameters', async () => {
    const result = await make().fill('show the status', makeTool({ id: 'git_status' }));
    expect(result).toEqual({ arguments: {}, missing: [], confidence: 1, notes: [] });
    expect(server.seen).toHaveLength(0);
  });
});

describe('LLM argument filler: the answer', () => {
  it('fills from a tool call, applies defaults, and marks the values as model-filled', async () => {
    const result = await make().fill(INTENT, weather);
    expect(result).toEqual({
      arguments: { city: 'Lisbon', days: 5, units: 'metric' },
      missing: [],
      confidence: 0.7,
      notes: [`arguments from gpt-4o-mini at ${new URL(server.url).host}`, 'units: the schema default'],
    });
  });

  it('accepts JSON in message.content, fenced (llama.cpp) or as {"name", "parameters"} (Ollama)', async () => {
    for (const name of ['llamacpp-content-json', 'ollama-content-json']) {
      server.answer = replay(recorded(name));
      const result = await make({ model: 'small' }).fill(INTENT, weather);
      expect(result.arguments, name).toEqual({ city: 'Lisbon', days: 5, units: 'metric' });
      expect(result.missing).toEqual([]);
    }
  });

  it('accepts arguments sent as an object rather than a JSON string, and null for an optional argument', async () => {
    const body = JSON.parse(recorded('openai-tool-call'));
    body.choices[0].message.tool_calls[0].function.arguments = { city: 'Oslo', days: null, units: 'imperial' };
    server.answer = replay(JSON.stringify(body));
    const result = await make().fill('weather in Oslo in fahrenheit', weather);
    expect(result.arguments).toEqual({ city: 'Oslo', units: 'imperial' });
    expect(result.notes).not.toContain('units: the schema default');
  });

  it('refuses a wrong-typed argument: no arguments, the required ones without a valid value missing, the reason in a note', async () => {
    server.answer = replay(toolCallWith('{"city": 42, "days": "five"}'));
    const result = await make().fill(INTENT, weather);
    expect(result.arguments).toEqual({});
    // units has a default, so only city lacks a valid value.
    expect(result.missing).toEqual(['city']);
    expect(result.confidence).toBe(0);
    expect(result.notes.at(-1)).toMatch(/^the model's arguments were refused: tool weather_forecast: argument `city` must be a string, got number 42/);
  });

  it('refuses an argument the tool does not have', async () => {
    server.answer = replay(toolCallWith('{"city": "Lisbon", "country": "PT"}'));
    const result = await make().fill(INTENT, weather);
    expect(result.arguments).toEqual({});
    expect(result.missing).toEqual([]);
    expect(result.notes.at(-1)).toMatch(/unknown argument `country`; its parameters are city, days, units, sources/);
  });

  it('keeps the values the model gave and reports a required argument it left out as missing', async () => {
    server.answer = replay(toolCallWith('{"days": 3}'));
    const result = await make().fill('the weather for 3 days', weather);
    expect(result.arguments).toMatchObject({ days: 3 });
    expect(result.arguments).not.toHaveProperty('city');
    expect(result.missing).toEqual(['city']);
  });

  it('fails with UPSTREAM_HTTP when the answer has no tool call and no JSON', async () => {
    server.answer = replay(recorded('malformed-prose'));
    const error = await failure(make().fill(INTENT, weather), 'UPSTREAM_HTTP');
    expect(error.message).toMatch(/the model's answer had no tool call or JSON arguments; use a model that supports function calling/);
    expect(error.message).toContain('Lisbon usually has mild weather');
  });

  it('fails with UPSTREAM_HTTP on tool-call arguments that are not JSON, a call to another function, and a non-JSON body', async () => {
    server.answer = replay(toolCallWith('{"city": "Lis'));
    expect((await failure(make().fill(INTENT, weather), 'UPSTREAM_HTTP')).message).toMatch(/no tool call or JSON arguments; its tool call's arguments are not a JSON object/);
    server.answer = replay(toolCallWith('{"q": "Lisbon"}', 'web_search'));
    expect((await failure(make().fill(INTENT, weather), 'UPSTREAM_HTTP')).message).toMatch(/it called web_search instead of weather_forecast/);
    server.answer = (_req, res) => res.writeHead(200, { 'content-type': 'text/html' }).end('<html>proxy login</html>');
    expect((await failure(make().fill(INTENT, weather), 'UPSTREAM_HTTP')).message).toMatch(/not JSON: <html>proxy login<\/html>/);
    server.answer = replay(contentReply('[1, 2, 3]'));
    await failure(make().fill(INTENT, weather), 'UPSTREAM_HTTP');
  });

  it('fails with OUTPUT_TOO_LARGE on arguments over the cap', async () => {
    server.answer = replay(toolCallWith(JSON.stringify({ city: 'x'.repeat(100_000) })));
    const error = await failure(make().fill(INTENT, weather), 'OUTPUT_TOO_LARGE');
    expect(error.message).toMatch(/the model's arguments are \d+ characters, over the 65536-character cap/);
  });
});

describe('LLM argument filler: failures', () => {
  it('turns a 500 into UPSTREAM_HTTP with the status and a body excerpt', async () => {
    server.answer = replay('{"error":{"message":"model failed to load: out of memory","type":"server_error"}}', 500);
    const error = await failure(make().fill(INTENT, weather), 'UPSTREAM_HTTP');
    expect(error.message).toMatch(/answered 500: .*model failed to load: out of memory/);
    expect(error.details).toMatchObject({ status: 500, model: 'gpt-4o-mini' });
  });

  it('never echoes the API key, even when the server does', async () => {
    server.answer = (req, res) => res.writeHead(401, { 'content-type': 'application/json' }).end(JSON.stringify({ error: `bad key ${req.headers.authorization}` }));
    const error = await failure(make({ apiKey: 'sk-secret-987' }).fill(INTENT, weather), 'UPSTREAM_HTTP');
    expect(error.message).toMatch(/answered 401: .*Bearer \[redacted\].*check the API key/);
    expect(JSON.stringify({ message: error.message, details: error.details })).not.toContain('sk-secret-987');
  });

  it('times out with HTTP_TIMEOUT when the server never answers', async () => {
    server.answer = () => undefined;
    const error = await failure(make({ timeoutMs: 300 }).fill(INTENT, weather), 'HTTP_TIMEOUT');
    expect(error.message).toMatch(/300 ms/);
  });

  it('is cancelled with TOOL_CANCELLED by its signal, before or during the request', async () => {
    const filler = make();
    await failure(filler.fill(INTENT, weather, { signal: AbortSignal.abort() }), 'TOOL_CANCELLED');
    expect(server.seen).toHaveLength(0);
    server.answer = () => undefined;
    const controller = new AbortController();
    const arrived = once(server.events, 'request');
    const pending = filler.fill(INTENT, weather, { signal: controller.signal });
    await arrived;
    controller.abort();
    await failure(pending, 'TOOL_CANCELLED');
  });

  it('fails with OUTPUT_TOO_LARGE on a response over maxResponseBytes', async () => {
    server.answer = replay(contentReply(`{"city": "${'y'.repeat(8000)}"}`));
    await failure(make({ maxResponseBytes: 4096 }).fill(INTENT, weather), 'OUTPUT_TOO_LARGE');
  });

  it('refuses bad options at creation, and calls after close', async () => {
    expect(() => createLlmArgumentFiller({ url: 'ftp://127.0.0.1/', model: 'm' })).toThrow(/must be http: or https:/);
    expect(() => createLlmArgumentFiller({ url: 'localhost:8080', model: 'm' })).toThrow(/http: or https:|not an absolute URL/);
    expect(() => createLlmArgumentFiller({ url: 'not a url', model: 'm' })).toThrow(/not an absolute URL/);
    expect(() => createLlmArgumentFiller({ url: server.url, model: '' })).toThrow(/model/);
    expect(() => createLlmArgumentFiller({ url: server.url, model: 'm', timeoutMs: 0 })).toThrow(/timeoutMs/);
    const filler = make();
    await filler.close();
    await failure(filler.fill(INTENT, weather), 'INTERNAL');
  });

  it('leaves an injected HTTP client open', async () => {
    const http = createHttpClient();
    closers.push(() => http.close());
    const filler = createLlmArgumentFiller({ url: server.url, model: 'm', http });
    await filler.fill(INTENT, weather);
    await filler.close();
    const res = await http.request({ method: 'POST', url: `${server.url}/v1/chat/completions`, body: '{}' });
    expect(res.status).toBe(200);
  });
});
