import { once } from 'node:events';
import { afterEach, describe, expect, it } from 'vitest';
import { KiwiError } from '../../../src/base/errors.js';
import type { LoopEvent, LoopRunOptions } from '../../../src/loop/loop-types.js';
import { createGatewayApp, type GatewayAppDeps } from '../../../src/http/server/app.js';
import { parseSse, sseJson } from '../../fixtures/http-edges/read-sse.js';
import { resolveScript, scriptedLoop, usage, type Script } from '../../fixtures/http-edges/scripted-loop.js';
import { serveGateway, type ServedGateway } from '../../fixtures/http-edges/serve-gateway.js';

/**
 * The life of a streamed answer: failures after the first byte, keep-alives while the loop is
 * quiet, and a client that goes away. The RunLoop is a script of LoopEvents (the loop itself is
 * tested elsewhere); no sleeps: the scripts wait on promises the tests resolve.
 */

const OPENAI = '/v1/chat/completions';
const ANTHROPIC = '/v1/messages';
const body = { model: 'm', max_tokens: 64, stream: true, messages: [{ role: 'user', content: 'hi' }] };

function app(script: Script, extra: Partial<GatewayAppDeps> = {}) {
  const loop = scriptedLoop(script);
  return createGatewayApp({ runLoop: loop.runLoop, models: () => ({ models: [] }), health: () => ({}), ...extra });
}

function post(a: ReturnType<typeof app>, path: string, payload: unknown = body) {
  return a.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(payload) });
}

function deferred<T = void>() {
  let resolve!: (value: T) => void;
  const promise = new Promise<T>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

const start: LoopEvent = { type: 'start', id: 'r1', model: 'm' };

describe('a loop that fails after the stream started', () => {
  const failing = (error: unknown): Script =>
    async function* () {
      yield start;
      yield { type: 'text', text: 'Half' };
      throw error;
    };

  it('OpenAI: a data: {"error": …} chunk, then the stream ends without [DONE]', async () => {
    const res = await post(app(failing(new KiwiError('UPSTREAM_HTTP', 'upstream broke mid-stream; retry', { details: { status: 500 } }))), OPENAI);
    expect(res.status).toBe(200);
    expect(res.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    const text = await res.text();
    expect(text).not.toContain('[DONE]');
    const chunks = sseJson(text);
    expect(chunks.at(-1)).toEqual({ error: { message: 'upstream broke mid-stream; retry', type: 'server_error', param: null, code: null } });
    expect(chunks.map((c) => (c.choices as { delta: { content?: string } }[] | undefined)?.[0]?.delta.content ?? '').join('')).toBe('Half');
  });

  it('Anthropic: an `event: error` with the error body, then the stream ends', async () => {
    const res = await post(app(failing(new KiwiError('UPSTREAM_HTTP', 'upstream overloaded; retry', { details: { status: 529 } }))), ANTHROPIC);
    const { events } = parseSse(await res.text());
    expect(events.map((e) => e.event)).toEqual(['message_start', 'kiwi', 'content_block_start', 'content_block_delta', 'error']);
    expect(JSON.parse(events.at(-1)?.data ?? '')).toEqual({ type: 'error', error: { type: 'api_error', message: 'upstream overloaded; retry' } });
  });

  it('a bug mid-stream shows no message or stack, and goes to onError', async () => {
    const seen: unknown[] = [];
    const res = await post(app(failing(new RangeError('secret internals at /srv/x.ts:1')), { onError: (e) => seen.push(e) }), OPENAI);
    const text = await res.text();
    expect(text).not.toContain('secret internals');
    expect(text).toContain('internal error');
    expect(seen).toHaveLength(1);
  });

  it('a loop that ends without a finish event is reported as an error, not a silent truncation', async () => {
    const res = await post(
      app(async function* () {
        yield start;
        yield { type: 'text', text: 'and then' } as LoopEvent;
      }),
      ANTHROPIC,
    );
    const { events } = parseSse(await res.text());
    expect(events.at(-1)?.event).toBe('error');
    expect(events.at(-1)?.data).toContain('without a finish event');
  });
});

describe('finishing', () => {
  it('a limit finish ends normally; OpenAI sends no usage chunk unless asked', async () => {
    const script: LoopEvent[] = [start, { type: 'text', text: 'Stopping: too many turns.' }, { type: 'finish', reason: 'stop', usage, turns: 8, toolCalls: 3, limit: 'turns' }];
    const chunks = sseJson(await (await post(app(script), OPENAI)).text());
    expect(chunks.at(-1)).toMatchObject({ choices: [{ finish_reason: 'stop' }], kiwi: { type: 'finish', limit: 'turns' } });
    expect(chunks.some((c) => 'usage' in c)).toBe(false);
    const { events } = parseSse(await (await post(app(script), ANTHROPIC)).text());
    const delta = events.find((e) => e.event === 'message_delta');
    expect(JSON.parse(delta?.data ?? '')).toEqual({ type: 'message_delta', delta: { stop_reason: 'end_turn', stop_sequence: null }, usage: { input_tokens: 42, output_tokens: 17 } });
  });

  it('length maps to length / max_tokens', async () => {
    const script: LoopEvent[] = [start, { type: 'text', text: 'cut' }, { type: 'finish', reason: 'length', usage: {}, turns: 1, toolCalls: 0 }];
    expect(sseJson(await (await post(app(script), OPENAI)).text()).at(-1)).toMatchObject({ choices: [{ finish_reason: 'length' }] });
    const { events } = parseSse(await (await post(app(script), ANTHROPIC)).text());
    expect(JSON.parse(events.find((e) => e.event === 'message_delta')?.data ?? '')).toMatchObject({ delta: { stop_reason: 'max_tokens' }, usage: { input_tokens: 0, output_tokens: 0 } });
  });

  it('resolve-only streams as raw events: the intent is not content, the call is a native tool call', async () => {
    const a = app(resolveScript);
    const res = await a.request(OPENAI, { method: 'POST', headers: { 'content-type': 'application/json', 'x-kiwi-mode': 'resolve-only' }, body: JSON.stringify(body) });
    const chunks = sseJson(await res.text());
    const deltas = chunks.map((c) => (c.choices as { delta: Record<string, unknown> }[])[0]?.delta ?? {});
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('Checking. ');
    expect(deltas.find((d) => d.tool_calls !== undefined)).toEqual({ tool_calls: [{ index: 0, id: 'call_7', type: 'function', function: { name: 'read_file', arguments: '{"path":"README.md"}' } }] });
    const b = app(resolveScript);
    const an = await b.request(ANTHROPIC, { method: 'POST', headers: { 'content-type': 'application/json', 'x-kiwi-mode': 'resolve-only' }, body: JSON.stringify(body) });
    const events = parseSse(await an.text()).events.filter((e) => e.event !== 'kiwi');
    expect(events.map((e) => JSON.parse(e.data) as unknown)).toEqual([
      { type: 'message_start', message: { id: 'kiwi-resp-2', type: 'message', role: 'assistant', model: 'gpt-4o-mini', content: [], stop_reason: null, stop_sequence: null, usage: { input_tokens: 0, output_tokens: 0 } } },
      { type: 'content_block_start', index: 0, content_block: { type: 'text', text: '' } },
      { type: 'content_block_delta', index: 0, delta: { type: 'text_delta', text: 'Checking. ' } },
      { type: 'content_block_stop', index: 0 },
      { type: 'content_block_start', index: 1, content_block: { type: 'tool_use', id: 'call_7', name: 'read_file', input: {} } },
      { type: 'content_block_delta', index: 1, delta: { type: 'input_json_delta', partial_json: '{"path":"README.md"}' } },
      { type: 'content_block_stop', index: 1 },
      { type: 'message_delta', delta: { stop_reason: 'tool_use', stop_sequence: null }, usage: { input_tokens: 42, output_tokens: 17 } },
      { type: 'message_stop' },
    ]);
  });
});

describe('keep-alive while the loop is quiet', () => {
  async function quietStream(path: string, isKeepAlive: (chunk: string) => boolean) {
    const gate = deferred();
    const a = app(
      async function* () {
        yield start;
        await gate.promise; // a long tool run
        yield { type: 'finish', reason: 'stop', usage, turns: 1, toolCalls: 0 } as LoopEvent;
      },
      { limits: { keepAliveMs: 1 } },
    );
    const res = await post(a, path);
    const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
    let seen = '';
    while (!isKeepAlive(seen)) {
      const { value, done } = await reader.read();
      if (done) throw new Error(`stream ended before a keep-alive: ${seen}`);
      seen += value;
    }
    gate.resolve();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      seen += value;
    }
    return seen;
  }

  it('OpenAI gets SSE comments, which clients ignore', async () => {
    const text = await quietStream(OPENAI, (s) => s.includes(': keep-alive\n\n'));
    expect(text.endsWith('data: [DONE]\n\n')).toBe(true);
  });

  it('Anthropic gets ping events', async () => {
    const text = await quietStream(ANTHROPIC, (s) => s.includes('event: ping\ndata: {"type":"ping"}\n\n'));
    expect(parseSse(text).events.at(-1)?.event).toBe('message_stop');
  });
});

describe('a client that goes away', () => {
  let gateway: ServedGateway | undefined;
  afterEach(async () => {
    await gateway?.close();
    gateway = undefined;
  });

  /** A loop that yields its start, then waits for its signal to abort, and says when it did. */
  function waitingLoop() {
    const aborted = deferred<unknown>();
    const waiting = deferred();
    const script = async function* (_request: unknown, options: LoopRunOptions) {
      yield start;
      yield { type: 'text', text: 'working…' } as LoopEvent;
      const signal = options.signal!;
      waiting.resolve();
      if (!signal.aborted) await once(signal, 'abort');
      aborted.resolve(signal.reason);
      throw new KiwiError('TOOL_CANCELLED', 'cancelled');
    };
    return { script, aborted: aborted.promise, waiting: waiting.promise };
  }

  for (const [name, path, stream] of [
    ['a streamed OpenAI answer', OPENAI, true],
    ['a streamed Anthropic answer', ANTHROPIC, true],
    ['a non-streamed answer', OPENAI, false],
  ] as const) {
    it(`aborts the loop's signal: ${name}`, async () => {
      const { script, aborted, waiting } = waitingLoop();
      const loop = scriptedLoop(script as Script);
      gateway = await serveGateway({ runLoop: loop.runLoop, models: () => ({ models: [] }), health: () => ({}) });
      const client = new AbortController();
      const res = fetch(`${gateway.url}${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ ...body, stream }), signal: client.signal });
      let reader: ReadableStreamDefaultReader<Uint8Array> | undefined;
      if (stream) {
        reader = (await res).body!.getReader();
        await reader.read(); // the first bytes arrived: the stream is under way
      }
      await waiting; // the loop is mid-request, waiting on a tool
      client.abort();
      await reader?.cancel().catch(() => undefined);
      await res.catch(() => undefined);
      await expect(aborted).resolves.toBeDefined();
      expect(loop.calls[0]?.options.signal?.aborted).toBe(true);
    });
  }
});
