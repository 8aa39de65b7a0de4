import { describe, expect, it } from 'vitest';
import { KiwiError } from '../../../src/base/errors.js';
import type { LoopEvent } from '../../../src/loop/loop-types.js';
import { createGatewayApp, type GatewayAppDeps } from '../../../src/http/server/app.js';
import { logInternalError } from '../../../src/http/server/log-internal-error.js';
import { executeScript, scriptedLoop, type Script } from '../../fixtures/http-edges/scripted-loop.js';

/**
 * Every bad input the chat edges refuse, through app.request(), each answered in the client's
 * own error shape: OpenAI `{error:{message,type,param,code}}`, Anthropic
 * `{type:'error',error:{type,message}}`. The RunLoop is a script (the loop is tested elsewhere).
 */

const OPENAI = '/v1/chat/completions';
const ANTHROPIC = '/v1/messages';
const okOpenAi = { model: 'm', messages: [{ role: 'user', content: 'hi' }] };
const okAnthropic = { model: 'm', max_tokens: 64, messages: [{ role: 'user', content: 'hi' }] };

function app(script: Script = executeScript, extra: Partial<GatewayAppDeps> = {}) {
  const loop = scriptedLoop(script);
  return { app: createGatewayApp({ runLoop: loop.runLoop, models: () => ({ models: [] }), health: () => ({}), ...extra }), loop };
}

function post(a: ReturnType<typeof app>['app'], path: string, body: unknown, headers: Record<string, string> = {}) {
  return a.request(path, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body: typeof body === 'string' ? body : JSON.stringify(body) });
}

interface OpenAiError {
  error: { message: string; type: string; param: string | null; code: string | null };
}
interface AnthropicError {
  type: 'error';
  error: { type: string; message: string };
}

async function openAiError(res: Response, status: number): Promise<OpenAiError['error']> {
  expect(res.status).toBe(status);
  expect(res.headers.get('content-type')).toContain('application/json');
  const body = (await res.json()) as OpenAiError;
  expect(Object.keys(body.error).sort()).toEqual(['code', 'message', 'param', 'type']);
  return body.error;
}

async function anthropicError(res: Response, status: number): Promise<AnthropicError['error']> {
  expect(res.status).toBe(status);
  const body = (await res.json()) as AnthropicError;
  expect(body.type).toBe('error');
  return body.error;
}

describe('reading the body', () => {
  it('malformed JSON is a 400 in both protocols', async () => {
    const { app: a } = app();
    const o = await openAiError(await post(a, OPENAI, '{"model": "m", "messages": ['), 400);
    expect(o).toMatchObject({ type: 'invalid_request_error' });
    expect(o.message).toMatch(/not valid JSON.*send a JSON object/);
    const an = await anthropicError(await post(a, ANTHROPIC, '{"model": '), 400);
    expect(an.type).toBe('invalid_request_error');
    expect(an.message).toContain('not valid JSON');
  });

  it('a wrong or missing content type is a 415 that names the type to send', async () => {
    const { app: a } = app();
    const o = await openAiError(await a.request(OPENAI, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: JSON.stringify(okOpenAi) }), 415);
    expect(o.message).toContain('Content-Type: application/json');
    expect(o.message).toContain('text/plain');
    const an = await anthropicError(await a.request(ANTHROPIC, { method: 'POST', body: new Blob([JSON.stringify(okAnthropic)]) }), 415);
    expect(an.message).toContain('none was given');
    // A charset parameter is fine.
    expect((await post(a, OPENAI, okOpenAi, { 'content-type': 'application/json; charset=utf-8' })).status).toBe(200);
  });

  it('a body over the limit is a 413, refused from its Content-Length before it is read', async () => {
    const { app: a, loop } = app(executeScript, { limits: { maxBodyBytes: 1024 } });
    const big = { ...okOpenAi, messages: [{ role: 'user', content: 'x'.repeat(2000) }] };
    const o = await openAiError(await post(a, OPENAI, big), 413);
    expect(o.message).toContain('limit of 1024 bytes');
    expect(o.code).toBe('payload_too_large');
    const an = await anthropicError(await post(a, ANTHROPIC, { ...okAnthropic, messages: big.messages }), 413);
    expect(an.type).toBe('request_too_large');
    expect(loop.calls).toHaveLength(0);
  });

  it('a chunked body with no length is cut off as soon as it passes the limit, not read to its end', async () => {
    const { app: a } = app(executeScript, { limits: { maxBodyBytes: 4096 } });
    let cancelled = false;
    let sent = 0;
    // An endless body: if the cap were only checked at the end, this request would never finish.
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        sent += 1000;
        controller.enqueue(new TextEncoder().encode(sent === 1000 ? `{"model":"m","x":"${' '.repeat(990)}` : ' '.repeat(1000)));
      },
      cancel() {
        cancelled = true;
      },
    });
    const request = new Request(`http://localhost${ANTHROPIC}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: endless, duplex: 'half' } as RequestInit);
    const an = await anthropicError(await a.request(request), 413);
    expect(an.message).toContain('limit of 4096 bytes');
    expect(cancelled).toBe(true);
    expect(sent).toBeLessThanOrEqual(6000);
  });

  it('JSON nested 5,000 levels deep is a 400 that says so, in both protocols, and never reaches the loop', async () => {
    const { app: a, loop } = app();
    const deep = '{"a":'.repeat(5000) + '1' + '}'.repeat(5000);
    // A tool_use input is written back out with JSON.stringify, which ran out of stack on this (a 500).
    const toolUse = `{"model":"m","max_tokens":5,"messages":[{"role":"assistant","content":[{"type":"tool_use","id":"t","name":"f","input":${deep}}]},{"role":"user","content":"x"}]}`;
    const an = await anthropicError(await post(a, ANTHROPIC, toolUse), 400);
    expect(an.message).toMatch(/^The request body is nested too deeply: more than 128 levels of arrays and objects \(at character \d+\); flatten it$/);
    const o = await openAiError(await post(a, OPENAI, `{"model":"m","messages":[{"role":"user","content":"x"}],"metadata":${'['.repeat(5000)}${']'.repeat(5000)}}`), 400);
    expect(o.message).toContain('nested too deeply');
    expect(loop.calls).toHaveLength(0);
  });

  it('deep brackets inside a string are text, not nesting', async () => {
    const { app: a } = app();
    expect((await post(a, OPENAI, { model: 'm', messages: [{ role: 'user', content: `${'[{'.repeat(5000)} "\\" \\"` }] })).status).toBe(200);
  });

  it('an empty body, a body that is not an object, and invalid UTF-8 are 400s', async () => {
    const { app: a } = app();
    expect((await openAiError(await post(a, OPENAI, ''), 400)).message).toContain('empty');
    expect((await openAiError(await post(a, OPENAI, '[1, 2]'), 400)).message).toContain('must be a JSON object');
    const bytes = new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]);
    expect((await anthropicError(await a.request(ANTHROPIC, { method: 'POST', headers: { 'content-type': 'application/json' }, body: bytes }), 400)).message).toContain('UTF-8');
  });
});

describe('checking the fields we read', () => {
  it('a missing model or messages is a 400 naming the field', async () => {
    const { app: a } = app();
    expect(await openAiError(await post(a, OPENAI, { messages: okOpenAi.messages }), 400)).toMatchObject({ param: 'model', message: 'model is required in a chat completions body' });
    expect(await openAiError(await post(a, OPENAI, { model: 'm' }), 400)).toMatchObject({ param: 'messages' });
    expect((await openAiError(await post(a, OPENAI, { model: 'm', messages: [] }), 400)).message).toContain('give at least one message');
    expect((await anthropicError(await post(a, ANTHROPIC, { messages: okAnthropic.messages }), 400)).message).toBe('model is required in a messages body');
    expect((await anthropicError(await post(a, ANTHROPIC, { model: 'm', messages: 'hi' }), 400)).message).toMatch(/^messages is invalid/);
  });

  it('wrong types and ranges are 400s naming the field', async () => {
    const { app: a } = app();
    expect(await openAiError(await post(a, OPENAI, { ...okOpenAi, temperature: 3 }), 400)).toMatchObject({ param: 'temperature' });
    expect(await openAiError(await post(a, OPENAI, { ...okOpenAi, max_tokens: -1 }), 400)).toMatchObject({ param: 'max_tokens' });
    expect(await openAiError(await post(a, OPENAI, { ...okOpenAi, stop: 7 }), 400)).toMatchObject({ param: 'stop', message: expect.stringContaining('non-empty string') });
    expect(await openAiError(await post(a, OPENAI, { ...okOpenAi, stream: 'yes' }), 400)).toMatchObject({ param: 'stream' });
    expect(await openAiError(await post(a, OPENAI, { ...okOpenAi, n: 2 }), 400)).toMatchObject({ param: 'n', message: expect.stringContaining('one choice') });
    expect(await openAiError(await post(a, OPENAI, { model: 'm', messages: [{ role: 'robot', content: 'x' }] }), 400)).toMatchObject({ param: 'messages[0].role' });
    expect(await openAiError(await post(a, OPENAI, { model: 'm', messages: [{ role: 'user', content: 5 }] }), 400)).toMatchObject({
      param: 'messages[0].content',
      message: expect.stringContaining('a string or an array of content parts'),
    });
    const badCall = { model: 'm', messages: [{ role: 'assistant', content: null, tool_calls: [{ id: 'c', type: 'function', function: { name: 'f', arguments: { a: 1 } } }] }] };
    expect(await openAiError(await post(a, OPENAI, badCall), 400)).toMatchObject({ param: 'messages[0].tool_calls[0].function.arguments' });
    expect((await anthropicError(await post(a, ANTHROPIC, { ...okAnthropic, temperature: 1.5 }), 400)).message).toMatch(/^temperature is invalid/);
    expect((await anthropicError(await post(a, ANTHROPIC, { ...okAnthropic, stop_sequences: [''] }), 400)).message).toMatch(/^stop_sequences\[0\] is invalid/);
  });

  it('image and audio parts are refused: the gateway forwards text only for now', async () => {
    const { app: a, loop } = app();
    const image = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text', text: 'what is this?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }] }] };
    const o = await openAiError(await post(a, OPENAI, image), 400);
    expect(o.param).toBe('messages[0].content[1]');
    expect(o.message).toContain('forwards text only for now');
    const audio = { model: 'm', messages: [{ role: 'user', content: [{ type: 'input_audio', input_audio: { data: 'AAAA', format: 'wav' } }] }] };
    expect((await openAiError(await post(a, OPENAI, audio), 400)).message).toContain('"input_audio" part; the gateway forwards text only');
    const anthropicImage = { ...okAnthropic, messages: [{ role: 'user', content: [{ type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'AAAA' } }] }] };
    expect((await anthropicError(await post(a, ANTHROPIC, anthropicImage), 400)).message).toBe(
      'messages[0].content[0] is a "image" part; the gateway forwards text only for now: send the content as text',
    );
    expect(loop.calls).toHaveLength(0);
  });

  it('unknown part types and misplaced blocks are 400s that say what is read', async () => {
    const { app: a } = app();
    const odd = { model: 'm', messages: [{ role: 'user', content: [{ type: 'hologram' }] }] };
    expect((await openAiError(await post(a, OPENAI, odd), 400)).message).toContain('has type "hologram", which the gateway does not read; send text parts');
    const textless = { model: 'm', messages: [{ role: 'user', content: [{ type: 'text' }] }] };
    expect(await openAiError(await post(a, OPENAI, textless), 400)).toMatchObject({ param: 'messages[0].content[0].text' });
    const misplaced = { ...okAnthropic, messages: [{ role: 'assistant', content: [{ type: 'tool_result', tool_use_id: 'x', content: 'y' }] }] };
    expect((await anthropicError(await post(a, ANTHROPIC, misplaced), 400)).message).toContain('send text blocks ({"type": "text", "text": "…"}) or tool_use blocks');
    const thinkingOnly = { ...okAnthropic, messages: [{ role: 'assistant', content: [{ type: 'thinking', thinking: '…', signature: 's' }] }] };
    expect((await anthropicError(await post(a, ANTHROPIC, thinkingOnly), 400)).message).toContain('hold no text the gateway can forward');
  });
});

describe('the mode', () => {
  it('a bad x-kiwi-mode header is a 400 that lists the modes', async () => {
    const { app: a, loop } = app();
    const o = await openAiError(await post(a, OPENAI, okOpenAi, { 'x-kiwi-mode': 'yolo' }), 400);
    expect(o.message).toBe('The x-kiwi-mode header is "yolo"; it must be "execute" or "resolve-only" (or leave it out for execute)');
    expect((await anthropicError(await post(a, ANTHROPIC, okAnthropic, { 'x-kiwi-mode': '' }), 400)).message).toContain('x-kiwi-mode');
    expect(loop.calls).toHaveLength(0);
  });

  it('a model that is only a mode suffix is a 400', async () => {
    const { app: a } = app();
    expect(await openAiError(await post(a, OPENAI, { ...okOpenAi, model: '+resolve-only' }), 400)).toMatchObject({ param: 'model' });
  });

  it('the suffix picks the mode and is stripped; the header wins over the suffix when both are given', async () => {
    const { app: a, loop } = app();
    await post(a, OPENAI, { ...okOpenAi, model: 'gpt+resolve-only' });
    await post(a, OPENAI, { ...okOpenAi, model: 'gpt+resolve-only' }, { 'x-kiwi-mode': 'execute' });
    await post(a, ANTHROPIC, { ...okAnthropic, model: 'claude+execute' }, { 'x-kiwi-mode': 'Resolve-Only' });
    await post(a, ANTHROPIC, okAnthropic);
    expect(loop.calls.map((c) => [c.request.model, c.options.mode])).toEqual([
      ['gpt', 'resolve-only'],
      ['gpt', 'execute'],
      ['claude', 'resolve-only'],
      ['m', 'execute'],
    ]);
  });
});

describe('errors from the loop before the first event', () => {
  const thrower = (error: unknown): Script => () => {
    throw error;
  };

  it('UNKNOWN_MODEL is a 404 with code model_not_found (OpenAI) and not_found_error (Anthropic)', async () => {
    const { app: a } = app(thrower(new KiwiError('UNKNOWN_MODEL', 'No upstream serves model "m"; pick one from GET /v1/models')));
    expect(await openAiError(await post(a, OPENAI, okOpenAi), 404)).toEqual({
      message: 'No upstream serves model "m"; pick one from GET /v1/models',
      type: 'invalid_request_error',
      param: null,
      code: 'model_not_found',
    });
    expect(await anthropicError(await post(a, ANTHROPIC, okAnthropic), 404)).toEqual({ type: 'not_found_error', message: 'No upstream serves model "m"; pick one from GET /v1/models' });
  });

  it('an upstream 4xx keeps its status; its type passes through when the upstream speaks the client protocol', async () => {
    const upstream = (status: number, provider: string, type: string) =>
      new KiwiError('UPSTREAM_HTTP', `upstream answered ${status} ${type}: no; fix it`, { details: { status, provider, type } });
    const { app: same } = app(thrower(upstream(400, 'openai', 'invalid_request_error')));
    expect(await openAiError(await post(same, OPENAI, okOpenAi), 400)).toMatchObject({ type: 'invalid_request_error', message: 'upstream answered 400 invalid_request_error: no; fix it' });
    const { app: other } = app(thrower(upstream(429, 'openai', 'requests')));
    expect(await anthropicError(await post(other, ANTHROPIC, okAnthropic), 429)).toMatchObject({ type: 'rate_limit_error' });
    const { app: perm } = app(thrower(upstream(403, 'anthropic', 'permission_error')));
    expect(await anthropicError(await post(perm, ANTHROPIC, okAnthropic), 403)).toMatchObject({ type: 'permission_error' });
    expect(await openAiError(await post(perm, OPENAI, okOpenAi), 403)).toMatchObject({ type: 'permission_error' });
  });

  it('an upstream 5xx, a redirect or a broken stream is a 502', async () => {
    for (const status of [500, 529, 302]) {
      const { app: a } = app(thrower(new KiwiError('UPSTREAM_HTTP', `upstream answered ${status}`, { details: { status, provider: 'anthropic', type: 'overloaded_error' } })));
      expect(await anthropicError(await post(a, ANTHROPIC, okAnthropic), 502)).toMatchObject({ type: 'api_error' });
      expect(await openAiError(await post(a, OPENAI, okOpenAi), 502)).toMatchObject({ type: 'server_error' });
    }
  });

  it("an upstream's Retry-After and retry-after-ms go to the client with its 429 or 502, in both protocols", async () => {
    const limited = new KiwiError('UPSTREAM_HTTP', 'upstream answered 429', { details: { status: 429, provider: 'openai', retryAfter: '7', retryAfterMs: '6500' } });
    for (const path of [OPENAI, ANTHROPIC]) {
      const res = await post(app(thrower(limited)).app, path, path === OPENAI ? okOpenAi : okAnthropic);
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBe('7');
      expect(res.headers.get('retry-after-ms')).toBe('6500');
    }
    const date = 'Wed, 21 Oct 2026 07:28:00 GMT';
    const overloaded = new KiwiError('UPSTREAM_HTTP', 'upstream answered 503', { details: { status: 503, provider: 'anthropic', retryAfter: date } });
    const res = await post(app(thrower(overloaded)).app, ANTHROPIC, okAnthropic);
    expect(res.status).toBe(502);
    expect(res.headers.get('retry-after')).toBe(date);
  });

  it('a Retry-After that is neither seconds nor a date is not passed on', async () => {
    for (const retryAfter of ['soon', '-1', '1.5', 'Wed, 21 Oct 2026 07:28:00 GMT; x=1']) {
      const error = new KiwiError('UPSTREAM_HTTP', 'upstream answered 429', { details: { status: 429, provider: 'openai', retryAfter, retryAfterMs: 'later' } });
      const res = await post(app(thrower(error)).app, OPENAI, okOpenAi);
      expect(res.status).toBe(429);
      expect(res.headers.get('retry-after')).toBeNull();
      expect(res.headers.get('retry-after-ms')).toBeNull();
    }
  });

  it('an error thrown by the first step of the iterator is mapped the same way', async () => {
    const { app: a } = app(async function* (): AsyncGenerator<LoopEvent> {
      yield* [];
      throw new KiwiError('INVALID_INPUT', 'the request has only system messages; add a user message');
    });
    expect(await openAiError(await post(a, OPENAI, okOpenAi), 400)).toMatchObject({ message: 'the request has only system messages; add a user message' });
  });

  it('anything else is a 500 that leaks no message or stack, and is reported to onError', async () => {
    const seen: unknown[] = [];
    const bug = new TypeError('Cannot read properties of undefined (reading secretThing) at /srv/kiwi/loop.ts:12');
    const { app: a } = app(thrower(bug), { onError: (error, info) => seen.push(error, info.route) });
    const res = await post(a, OPENAI, okOpenAi, { 'x-request-id': 'trace-1' });
    const text = await res.clone().text();
    const o = await openAiError(res, 500);
    expect(o.type).toBe('server_error');
    expect(o.message).toContain('request trace-1');
    expect(text).not.toContain('secretThing');
    expect(text).not.toContain('loop.ts');
    expect(seen).toEqual([bug, OPENAI]);
    const an = await anthropicError(await post(a, ANTHROPIC, okAnthropic), 500);
    expect(an.type).toBe('api_error');
    expect(an.message).not.toContain('secretThing');
  });

  it('logInternalError puts the request id, the route and the stack in the log, where the id the client got leads', async () => {
    const lines: string[] = [];
    const { app: a } = app(thrower(new TypeError('secretThing is undefined')), { onError: logInternalError((line) => lines.push(line)) });
    await openAiError(await post(a, OPENAI, okOpenAi, { 'x-request-id': 'trace-2' }), 500);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(/^internal error on \/v1\/chat\/completions \(request trace-2\):\nTypeError: secretThing is undefined\n {4}at /);
  });

  it('logInternalError cuts a stack overflow\'s stack to its first frames', () => {
    const lines: string[] = [];
    const error = new RangeError('Maximum call stack size exceeded');
    error.stack = [`${error.name}: ${error.message}`, ...Array.from({ length: 500 }, (_, i) => `    at f${i} (x.ts:1:1)`)].join('\n');
    logInternalError((line) => lines.push(line))(error, { requestId: 'r', route: '/v1/messages' });
    expect(lines[0]!.split('\n')).toHaveLength(32);
    expect(lines[0]).toContain('… 471 more frames');
  });

  it('a non-streamed request whose loop fails midway still gets a proper error status', async () => {
    const { app: a } = app(async function* (): AsyncGenerator<LoopEvent> {
      yield { type: 'start', id: 'r', model: 'm' };
      yield { type: 'text', text: 'partial' };
      throw new KiwiError('TOOL_TIMEOUT', 'read_file took longer than 30 s; retry with a smaller file');
    });
    expect(await anthropicError(await post(a, ANTHROPIC, okAnthropic), 504)).toMatchObject({ type: 'api_error', message: 'read_file took longer than 30 s; retry with a smaller file' });
  });
});
