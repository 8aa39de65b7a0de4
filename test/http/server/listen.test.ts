import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { LoopEvent } from '../../../src/loop/loop-types.js';
import { createGatewayApp } from '../../../src/http/server/app.js';
import { listen, type ListenOptions, type Listener } from '../../../src/http/server/listen.js';
import { createRequestGuard, DEFAULT_ALLOWED_HOSTS } from '../../../src/http/server/request-guard.js';
import { executeScript, scriptedLoop, type Script } from '../../fixtures/http-edges/scripted-loop.js';
import { failure } from '../../helpers/expect-failure.js';

/**
 * The listener's doors, over real sockets on 127.0.0.1: what a client that sends nothing, sends
 * its body slowly, or comes when the connections are all taken is told, and that a long
 * streamed answer is not cut by any of those limits.
 */

const listeners: Listener[] = [];
afterEach(async () => {
  await Promise.all(listeners.splice(0).map((l) => l.close(0)));
});

async function serve(options: Partial<ListenOptions>, script: Script = executeScript, maxBodyBytes?: number): Promise<Listener> {
  const app = createGatewayApp({ runLoop: scriptedLoop(script).runLoop, models: () => ({ models: [] }), health: () => ({}), ...(maxBodyBytes ? { limits: { maxBodyBytes } } : {}) });
  const listener = await listen((request, env) => app.fetch(request, env), { host: '127.0.0.1', port: 0, ...options });
  listeners.push(listener);
  return listener;
}

interface RawClient {
  socket: net.Socket;
  /** Everything the server sent, once it has closed the connection. */
  closed: Promise<string>;
  /** Everything the server has sent so far, once it contains `text`. */
  received(text: string): Promise<string>;
}

function rawClient(port: number): RawClient {
  const socket = net.connect(port, '127.0.0.1');
  let got = '';
  const waiting: { text: string; resolve: (s: string) => void }[] = [];
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => {
    got += chunk;
    for (const w of waiting.filter((x) => got.includes(x.text))) w.resolve(got);
  });
  socket.on('error', () => undefined);
  const closed = new Promise<string>((resolve) => socket.on('close', () => resolve(got)));
  return {
    socket,
    closed,
    received: (text) => (got.includes(text) ? Promise.resolve(got) : new Promise((resolve) => waiting.push({ text, resolve }))),
  };
}

const jsonBody = (raw: string): unknown => JSON.parse(raw.slice(raw.indexOf('\r\n\r\n') + 4));

function slowPost(port: number, path: string): { client: RawClient; stop(): void } {
  const client = rawClient(port);
  client.socket.write(`POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{`);
  // The attack: a byte now and then, never a gap long enough for an idle timer.
  const drip = setInterval(() => client.socket.write(' '), 20);
  void client.closed.then(() => clearInterval(drip));
  return { client, stop: () => clearInterval(drip) };
}

describe('a body that arrives too slowly', () => {
  it('is answered 408 in OpenAI form on the OpenAI route, and the connection is closed', async () => {
    const { port } = await serve({ bodyTimeoutMs: 200 });
    const { client } = slowPost(port, '/v1/chat/completions');
    const raw = await client.closed;
    expect(raw).toMatch(/^HTTP\/1\.1 408 /);
    expect(jsonBody(raw)).toEqual({
      error: { message: expect.stringContaining('did not arrive in full within 0.2 s'), type: 'invalid_request_error', param: null, code: 'request_timeout' },
    });
  });

  it('is answered 408 in Anthropic form on the Anthropic route', async () => {
    const { port } = await serve({ bodyTimeoutMs: 200 });
    const { client } = slowPost(port, '/v1/messages');
    const raw = await client.closed;
    expect(raw).toMatch(/^HTTP\/1\.1 408 /);
    expect(jsonBody(raw)).toEqual({ type: 'error', error: { type: 'invalid_request_error', message: expect.stringContaining('limits.body_timeout_ms') } });
  });

  it('is answered 408 in OpenAI form on the Responses route too', async () => {
    const { port } = await serve({ bodyTimeoutMs: 200 });
    const { client } = slowPost(port, '/v1/responses');
    const raw = await client.closed;
    expect(raw).toMatch(/^HTTP\/1\.1 408 /);
    expect(jsonBody(raw)).toMatchObject({ error: { message: expect.stringContaining('did not arrive in full within 0.2 s'), code: 'request_timeout' } });
  });

  it('a body that arrives in time is served as usual', async () => {
    const { url } = await serve({ bodyTimeoutMs: 5_000 });
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', messages: [{ role: 'user', content: 'hi' }] }) });
    expect(res.status).toBe(200);
  });
});

describe('a body past the cap, sent in chunks with no length', () => {
  it('is answered 413 while it is still being sent, and reading stops', async () => {
    const { port } = await serve({}, executeScript, 1024);
    const client = rawClient(port);
    client.socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n');
    const piece = `{"model":"m","messages":[${'{"role":"user","content":"x"},'.repeat(20)}`;
    client.socket.write(`${piece.length.toString(16)}\r\n${piece}\r\n`);
    client.socket.write(`${piece.length.toString(16)}\r\n${piece}\r\n`);
    const raw = await client.received('}}');
    expect(raw).toMatch(/^HTTP\/1\.1 413 /);
    expect(jsonBody(raw)).toMatchObject({ error: { message: expect.stringContaining("limit of 1024 bytes") } });
    client.socket.destroy();
  });
});

describe('a streamed answer written to the socket directly', () => {
  it('carries the SSE headers and the request id, and holds its client\'s slot until it ends', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    let calls = 0;
    const script: Script = async function* () {
      calls += 1;
      yield { type: 'start', id: 'r', model: 'm' };
      yield { type: 'text', text: 'working' };
      if (calls === 1) await held;
      yield { type: 'finish', reason: 'stop', usage: {}, turns: 1, toolCalls: 0 };
    };
    const guard = createRequestGuard({ allowedHosts: DEFAULT_ALLOWED_HOSTS, allowedOrigins: [], maxConcurrentPerClient: 1 });
    const app = createGatewayApp({ runLoop: scriptedLoop(script).runLoop, models: () => ({ models: [] }), health: () => ({}), guard });
    const listener = await listen((request, env) => app.fetch(request, env), { host: '127.0.0.1', port: 0 });
    listeners.push(listener);
    const ask = (id: string) =>
      fetch(`${listener.url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json', 'x-request-id': id }, body: JSON.stringify({ model: 'm', stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
    const first = await ask('first-1');
    expect(first.headers.get('content-type')).toBe('text/event-stream; charset=utf-8');
    expect(first.headers.get('x-request-id')).toBe('first-1');
    const reader = first.body!.getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toContain('working');
    expect((await ask('second-1')).status).toBe(429);
    release();
    let rest = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) rest += new TextDecoder().decode(r.value);
    expect(rest).toContain('data: [DONE]');
    const third = await ask('third-1');
    expect(third.status).toBe(200);
    expect(await third.text()).toContain('data: [DONE]');
    expect(guard.running()).toEqual({});
  });
});

describe('connections that send nothing', () => {
  it('are closed once the header timeout has passed', async () => {
    const { port } = await serve({ headersTimeoutMs: 200 });
    const raw = await rawClient(port).closed;
    expect(raw).toMatch(/^HTTP\/1\.1 408 /);
  });
});

describe('the connection cap', () => {
  const get = (client: RawClient, path: string): Promise<string> => {
    client.socket.write(`GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`);
    return client.received('\r\n\r\n{');
  };

  it('a request on a connection past the cap is answered 503 in its protocol, with Retry-After, and the connection closed', async () => {
    const { port } = await serve({ maxConnections: 2 });
    const held = [rawClient(port), rawClient(port)];
    // Answered, so the server has counted both.
    for (const client of held) expect(await get(client, '/healthz')).toMatch(/^HTTP\/1\.1 200 /);

    const openai = rawClient(port);
    openai.socket.write('POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 2\r\n\r\n{}');
    const raw = await openai.closed;
    expect(raw).toMatch(/^HTTP\/1\.1 503 /);
    expect(raw.toLowerCase()).toContain('retry-after: 1\r\n');
    expect(jsonBody(raw)).toEqual({ error: { message: expect.stringContaining('limit of 2 connections'), type: 'server_error', param: null, code: null } });

    const anthropic = rawClient(port);
    await get(anthropic, '/v1/messages');
    expect(jsonBody(await anthropic.closed)).toEqual({ type: 'error', error: { type: 'overloaded_error', message: expect.stringContaining('limits.max_connections') } });

    const mcp = rawClient(port);
    await get(mcp, '/mcp');
    expect(jsonBody(await mcp.closed)).toEqual({ jsonrpc: '2.0', error: { code: -32000, message: expect.stringContaining('limit of 2') }, id: null });

    // A slot freed is served again (the count follows closes; no leak).
    held[0]!.socket.destroy();
    await held[0]!.closed;
    let status = '';
    for (let attempt = 0; attempt < 100 && !status.startsWith('HTTP/1.1 200'); attempt++) {
      const next = rawClient(port);
      status = await get(next, '/healthz');
      next.socket.destroy();
      await next.closed;
    }
    expect(status).toMatch(/^HTTP\/1\.1 200 /);
  });
});

describe('a long streamed answer', () => {
  it('outlives the header and body deadlines (they bound the request, never the response)', async () => {
    let release!: () => void;
    const released = new Promise<void>((resolve) => (release = resolve));
    const script: Script = async function* (): AsyncIterable<LoopEvent> {
      yield { type: 'start', id: 'r1', model: 'gpt-4o-mini' };
      yield { type: 'text', text: 'first ' };
      await released;
      yield { type: 'text', text: 'last' };
      yield { type: 'finish', reason: 'stop', usage: { inputTokens: 1, outputTokens: 1 }, turns: 1, toolCalls: 0 };
    };
    const { url } = await serve({ headersTimeoutMs: 50, bodyTimeoutMs: 50 }, script);
    const res = await fetch(`${url}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'gpt-4o-mini', stream: true, messages: [{ role: 'user', content: 'hi' }] }) });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('first');
    // Past Node's request deadline (headers + body + 1 s) and several of its checks: no event
    // marks that moment, so this one test waits for it.
    setTimeout(release, 1_500);
    let text = '';
    for (let r = await reader.read(); !r.done; r = await reader.read()) text += new TextDecoder().decode(r.value);
    expect(text).toContain('last');
    expect(text).toContain('[DONE]');
  });
});

describe('the request handed on', () => {
  it('still aborts its signal when the client goes away (the request is handed on with its signal)', async () => {
    let aborted!: () => void;
    const sawAbort = new Promise<void>((resolve) => (aborted = resolve));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    const script: Script = async function* (_request, options): AsyncIterable<LoopEvent> {
      options.signal?.addEventListener('abort', () => aborted(), { once: true });
      started();
      await sawAbort;
      yield { type: 'start', id: 'r', model: 'm' };
    };
    const { port } = await serve({}, script);
    const client = rawClient(port);
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }] });
    client.socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await running;
    client.socket.destroy();
    await sawAbort;
  });
});

describe('closing', () => {
  it('closes a keep-alive connection as soon as its answer in flight ends, not after the keep-alive timeout', async () => {
    let finish: () => void = () => undefined;
    const body = new ReadableStream<Uint8Array>({
      start(controller) {
        controller.enqueue(new TextEncoder().encode('data: first\n\n'));
        finish = () => controller.close();
      },
    });
    const listener = await listen(() => new Response(body, { headers: { 'content-type': 'text/event-stream' } }), { host: '127.0.0.1', port: 0, keepAliveTimeoutMs: 60_000 });
    const client = rawClient(listener.port);
    client.socket.write('GET /stream HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n');
    await client.received('data: first');
    const closing = listener.close(60_000);
    // The answer ends after close() began (a stream the gateway ends at shutdown): the
    // connection is idle from then on, and nothing else will come on it.
    finish();
    const outcome = await Promise.race([closing.then(() => 'closed'), new Promise((resolve) => setTimeout(resolve, 5_000, 'still open after 5 s'))]);
    expect(outcome).toBe('closed');
    expect(await client.closed).toContain('data: first');
  });
});

describe('options', () => {
  it.each([
    ['bodyTimeoutMs', { bodyTimeoutMs: 0 }],
    ['maxConnections', { maxConnections: 1.5 }],
    ['headersTimeoutMs', { headersTimeoutMs: -1 }],
  ])('a bad %s is refused with the option named', async (name, bad) => {
    const error = await failure(listen(() => new Response(), { host: '127.0.0.1', port: 0, ...bad }), 'INVALID_INPUT');
    expect(error.message).toContain(`listen: ${name} must be a whole number of at least 1`);
  });
});
