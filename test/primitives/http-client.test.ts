import { once } from 'node:events';
import net, { type AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createHttpClient, type HttpClient, type HttpRequest } from '../../src/primitives/http-client.js';
import type { SseEvent } from '../../src/primitives/sse-parser.js';
import { closed, createLocalServers, writeForever } from '../fixtures/http/local-servers.js';
import { failure } from '../helpers/expect-failure.js';

const servers = createLocalServers();
const serve = servers.serve;
let client: HttpClient;

beforeEach(() => {
  client = createHttpClient();
});

afterEach(async () => {
  await servers.closeAll();
  await client.close();
});


async function collect(batches: AsyncIterable<SseEvent[]>): Promise<SseEvent[]> {
  const out: SseEvent[] = [];
  for await (const batch of batches) out.push(...batch);
  return out;
}

describe('http client: requests', () => {
  it('GETs JSON and returns status, lower-case headers, body and final URL', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json', 'X-Trace': 'abc' });
      res.end(JSON.stringify({ ok: true, name: 'kiwi ✓' }));
    });
    const res = await client.request({ method: 'get', url: `${url}/data?x=1` });
    expect(res.status).toBe(200);
    expect(res.headers['content-type']).toBe('application/json');
    expect(res.headers['x-trace']).toBe('abc');
    expect(JSON.parse(res.body)).toEqual({ ok: true, name: 'kiwi ✓' });
    expect(res.url).toBe(`${url}/data?x=1`);
  });

  it('POSTs a JSON body with the caller headers, as a string or as bytes', async () => {
    const { url, seen } = await serve((_req, res, body) => res.end(body.toUpperCase()));
    const headers = { 'Content-Type': 'application/json', 'X-Api-Key': 'k1' };
    const res = await client.request({ method: 'POST', url, headers, body: '{"q":"x"}' });
    expect(res.body).toBe('{"Q":"X"}');
    await client.request({ method: 'PUT', url, headers, body: new TextEncoder().encode('{"b":1}') });
    expect(seen.map((s) => [s.method, s.body, s.headers['content-type'], s.headers['x-api-key']])).toEqual([
      ['POST', '{"q":"x"}', 'application/json', 'k1'],
      ['PUT', '{"b":1}', 'application/json', 'k1'],
    ]);
  });

  it('returns a 4xx/5xx as a normal response', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(404, { 'Content-Type': 'text/plain' });
      res.end('no such thing');
    });
    const res = await client.request({ method: 'GET', url });
    expect(res).toMatchObject({ status: 404, body: 'no such thing' });
  });

  it('decodes the body with the charset the server names', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain; charset=iso-8859-1' });
      res.end(Buffer.from([0x63, 0x61, 0x66, 0xe9]));
    });
    expect((await client.request({ method: 'GET', url })).body).toBe('café');
  });

  it('reuses one connection for consecutive requests to the same origin', async () => {
    const { server, url } = await serve((_req, res) => res.end('ok'));
    let connections = 0;
    server.on('connection', () => (connections += 1));
    for (let i = 0; i < 3; i++) {
      await client.request({ method: 'GET', url });
      // undici hands the socket back to its pool just after the body ends; let that happen first.
      await new Promise((resolve) => setImmediate(resolve));
    }
    expect(connections).toBe(1);
  });
});

describe('http client: redirects', () => {
  it('follows a redirect and checks every hop with checkUrl', async () => {
    const { url } = await serve((req, res) => {
      if (req.url === '/start') res.writeHead(302, { Location: '/end' }).end();
      else res.end(`at ${req.url}`);
    });
    const checked: string[] = [];
    const res = await client.request({ method: 'GET', url: `${url}/start`, checkUrl: (u) => (checked.push(u.href), null) });
    expect(res).toMatchObject({ status: 200, body: 'at /end', url: `${url}/end` });
    expect(checked).toEqual([`${url}/start`, `${url}/end`]);
  });

  it('refuses a redirect to a host that checkUrl rejects, without contacting it', async () => {
    const target = await serve((_req, res) => res.end('secret'));
    const { url } = await serve((_req, res) => res.writeHead(302, { Location: `http://localhost:${target.port}/admin` }).end());
    const checkUrl = (u: URL) => (u.hostname === 'localhost' ? 'internal hosts are off limits' : null);
    const error = await failure(client.request({ method: 'GET', url: `${url}/go`, checkUrl }), 'POLICY_DENIED');
    expect(error.message).toContain('internal hosts are off limits');
    expect(error.message).toContain(`redirected from ${url}/go`);
    expect(target.seen).toHaveLength(0);
  });

  it('refuses the first URL when checkUrl rejects it', async () => {
    const { url, seen } = await serve((_req, res) => res.end('x'));
    const error = await failure(client.request({ method: 'GET', url, checkUrl: () => 'not on the allowlist' }), 'POLICY_DENIED');
    expect(error.message).toContain('not on the allowlist');
    expect(seen).toHaveLength(0);
  });

  it('stops a redirect loop and names the chain', async () => {
    const { url } = await serve((req, res) => res.writeHead(302, { Location: req.url === '/a' ? '/b' : '/a' }).end());
    const error = await failure(client.request({ method: 'GET', url: `${url}/a` }), 'HTTP_REDIRECT');
    expect(error.message).toContain(`redirect loop: ${url}/a → ${url}/b → ${url}/a`);
  });

  it('stops after maxRedirects and names the chain', async () => {
    const { url, seen } = await serve((req, res) => {
      const n = Number(req.url?.slice(1));
      res.writeHead(307, { Location: `/${n + 1}` }).end();
    });
    const error = await failure(client.request({ method: 'GET', url: `${url}/0`, maxRedirects: 3 }), 'HTTP_REDIRECT');
    expect(error.message).toContain('too many redirects (more than 3)');
    expect(error.message).toContain(`${url}/0 → ${url}/1 → ${url}/2 → ${url}/3`);
    expect(seen).toHaveLength(4);
  });

  it('returns the 3xx itself when maxRedirects is 0', async () => {
    const { url } = await serve((_req, res) => res.writeHead(302, { Location: '/elsewhere' }).end());
    const res = await client.request({ method: 'GET', url, maxRedirects: 0 });
    expect(res.status).toBe(302);
    expect(res.headers.location).toBe('/elsewhere');
  });

  it('turns a POST into a GET without body on 303, and keeps both on 307', async () => {
    const { url, seen } = await serve((req, res) => {
      if (req.url === '/see-other') res.writeHead(303, { Location: '/result' }).end();
      else if (req.url === '/temporary') res.writeHead(307, { Location: '/result' }).end();
      else res.end('done');
    });
    const post = { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"a":1}' };
    await client.request({ ...post, url: `${url}/see-other` });
    await client.request({ ...post, url: `${url}/temporary` });
    const results = seen.filter((s) => s.url === '/result');
    expect(results.map((s) => [s.method, s.body, s.headers['content-type']])).toEqual([
      ['GET', '', undefined],
      ['POST', '{"a":1}', 'application/json'],
    ]);
  });

  it('drops credentials on a redirect to another origin but keeps them on the same origin', async () => {
    const other = await serve((_req, res) => res.end('other'));
    const { url, seen } = await serve((req, res) => {
      if (req.url === '/same') res.writeHead(302, { Location: '/landing' }).end();
      else if (req.url === '/cross') res.writeHead(302, { Location: `${other.url}/landing` }).end();
      else res.end('landed');
    });
    const headers = { Authorization: 'Bearer secret', 'X-Other': 'kept' };
    await client.request({ method: 'GET', url: `${url}/same`, headers });
    await client.request({ method: 'GET', url: `${url}/cross`, headers });
    expect(seen.find((s) => s.url === '/landing')?.headers.authorization).toBe('Bearer secret');
    expect(other.seen[0]?.headers.authorization).toBeUndefined();
    expect(other.seen[0]?.headers['x-other']).toBe('kept');
  });

  it('refuses a redirect to a non-http scheme', async () => {
    const { url } = await serve((_req, res) => res.writeHead(301, { Location: 'file:///etc/passwd' }).end());
    const error = await failure(client.request({ method: 'GET', url }), 'HTTP_REDIRECT');
    expect(error.message).toContain('only http: and https: URLs are allowed, not file:');
  });
});

describe('http client: caps, timeouts, cancellation, connection errors', () => {
  it('refuses a body whose Content-Length is over the cap', async () => {
    const { url } = await serve((_req, res) => res.end(Buffer.alloc(20_000, 'y')));
    const error = await failure(client.request({ method: 'GET', url, maxResponseBytes: 10_240 }), 'OUTPUT_TOO_LARGE');
    expect(error.message).toContain('10240-byte cap (maxResponseBytes)');
  });

  it('lets a HEAD answer declare a length over the cap, since no body follows', async () => {
    const { url } = await serve((_req, res) => res.writeHead(200, { 'Content-Length': '999999' }).end());
    const res = await client.request({ method: 'HEAD', url, maxResponseBytes: 1000 });
    expect(res).toMatchObject({ status: 200, body: '' });
    expect(res.headers['content-length']).toBe('999999');
  });

  it('aborts a chunked body with no Content-Length as soon as it passes the cap', async () => {
    let gone: Promise<unknown> = new Promise(() => undefined);
    const { url } = await serve((_req, res) => {
      gone = closed(res);
      writeForever(res);
    });
    const error = await failure(client.request({ method: 'GET', url, maxResponseBytes: 64 * 1024 }), 'OUTPUT_TOO_LARGE');
    expect(error.message).toContain('passed 65536 bytes while streaming');
    await gone; // the server saw the transfer cut off, so the body was not read to the end
  });

  it('times out waiting for headers from a server that never answers', async () => {
    const { url } = await serve(() => undefined);
    const error = await failure(client.request({ method: 'GET', url, headersTimeoutMs: 200 }), 'HTTP_TIMEOUT');
    expect(error.details).toMatchObject({ phase: 'headers' });
    expect(error.message).toContain('headers timeout');
  });

  it('times out when the server stalls in the middle of the body', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'text/plain' });
      res.write('first part');
    });
    const error = await failure(client.request({ method: 'GET', url, bodyTimeoutMs: 200 }), 'HTTP_TIMEOUT');
    expect(error.details).toMatchObject({ phase: 'body' });
    expect(error.message).toContain('body timeout');
  });

  it('cancels in the middle of the body when the signal fires', async () => {
    const controller = new AbortController();
    let gone: Promise<unknown> = new Promise(() => undefined);
    const { url } = await serve((_req, res) => {
      gone = closed(res);
      res.writeHead(200);
      res.write('partial', () => controller.abort());
    });
    await failure(client.request({ method: 'GET', url, signal: controller.signal }), 'TOOL_CANCELLED');
    await gone;
  });

  it('does not send a request whose signal has already fired', async () => {
    const { url, seen } = await serve((_req, res) => res.end());
    await failure(client.request({ method: 'GET', url, signal: AbortSignal.abort() }), 'TOOL_CANCELLED');
    expect(seen).toHaveLength(0);
  });

  it('reports a refused connection as UPSTREAM_HTTP naming the host', async () => {
    const probe = net.createServer().listen(0, '127.0.0.1');
    await once(probe, 'listening');
    const { port } = probe.address() as AddressInfo;
    await new Promise((resolve) => probe.close(resolve));
    const error = await failure(client.request({ method: 'GET', url: `http://127.0.0.1:${port}/` }), 'UPSTREAM_HTTP');
    expect(error.message).toContain(`connection to 127.0.0.1:${port} was refused`);
  });

  it('times out connecting to a listener whose accept queue is full', async () => {
    const port = await servers.unacceptingPort();
    const error = await failure(client.request({ method: 'GET', url: `http://127.0.0.1:${port}/`, connectTimeoutMs: 200 }), 'HTTP_TIMEOUT');
    expect(error.details).toMatchObject({ phase: 'connect' });
    expect(error.message).toContain('connect timeout');
  });
});

describe('http client: input checks', () => {
  const bad: [string, Partial<HttpRequest>, string][] = [
    ['a file: URL', { url: 'file:///etc/passwd' }, 'only http: and https: URLs are allowed, not file:'],
    ['an ftp: URL', { url: 'ftp://example.test/x' }, 'not ftp:'],
    ['a relative URL', { url: '/just/a/path' }, 'is not an absolute URL'],
    ['credentials in the URL', { url: 'http://user:pw@127.0.0.1/' }, 'URLs with credentials'],
    ['a GET with a body', { body: 'x' }, 'a GET request cannot carry a body'],
    ['a method that is not a token', { method: 'GET /x' }, 'method: must be an HTTP token'],
    ['CONNECT', { method: 'CONNECT' }, 'HTTP method CONNECT is not allowed'],
    ['a negative timeout', { headersTimeoutMs: -1 }, 'headersTimeoutMs'],
    ['a zero size cap', { maxResponseBytes: 0 }, 'maxResponseBytes'],
    ['too many allowed redirects', { maxRedirects: 1000 }, 'maxRedirects'],
    ['a header value with a line break', { headers: { 'X-Evil': 'a\r\nInjected: 1' } }, 'invalid request'],
  ];
  for (const [name, patch, message] of bad) {
    it(`refuses ${name} with INVALID_INPUT`, async () => {
      const { url, seen } = await serve((_req, res) => res.end());
      const error = await failure(client.request({ method: 'GET', url, ...patch }), 'INVALID_INPUT');
      expect(error.message).toContain(message);
      expect(seen).toHaveLength(0);
    });
  }

  it('refuses requests after close()', async () => {
    await client.close();
    await failure(client.request({ method: 'GET', url: 'http://127.0.0.1:1/' }), 'INTERNAL');
  });
});

describe('http client: SSE streams', () => {
  const SSE = { 'Content-Type': 'text/event-stream', 'Cache-Control': 'no-cache' };

  it('parses an event stream delivered in many small writes, fields and characters split across them', async () => {
    const payload = ': hello\r\nevent: delta\r\ndata: {"text":"grüß"}\r\nid: 7\r\n\r\ndata: line one\ndata: line two\n\nretry: 1500\ndata: [DONE]\n\n';
    const bytes = Buffer.from(payload);
    const { url, seen } = await serve((_req, res) => {
      res.writeHead(200, SSE);
      let at = 0;
      const next = (): void => {
        if (at >= bytes.length) return void res.end();
        const piece = bytes.subarray(at, at + 3); // 3-byte pieces split "ü" and "ß" and every field name
        at += 3;
        res.write(piece, next);
      };
      next();
    });
    const events = await collect(client.stream({ method: 'GET', url }));
    expect(events).toEqual([
      { event: 'delta', data: '{"text":"grüß"}', id: '7' },
      { event: 'message', data: 'line one\nline two', id: '7' },
      { event: 'message', data: '[DONE]', id: '7', retry: 1500 },
    ]);
    expect(seen[0]?.headers.accept).toBe('text/event-stream');
  });

  it('stops a stream whose event passes maxEventBytes, and closes the connection', async () => {
    let gone: Promise<unknown> = new Promise(() => undefined);
    const { url } = await serve((_req, res) => {
      gone = closed(res);
      res.writeHead(200, SSE);
      res.write('data: small\n\n');
      res.write(`data: ${'z'.repeat(4096)}`);
    });
    const seenEvents: SseEvent[] = [];
    const run = async () => {
      for await (const batch of client.stream({ method: 'GET', url, maxEventBytes: 1024 })) seenEvents.push(...batch);
    };
    const error = await failure(run(), 'OUTPUT_TOO_LARGE');
    expect(error.message).toContain('1024-byte cap (maxEventBytes)');
    expect(seenEvents).toEqual([{ event: 'message', data: 'small' }]);
    await gone;
  });

  it('throws UPSTREAM_HTTP with the status and a body excerpt on a non-2xx answer', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(429, { 'Content-Type': 'application/json' });
      res.end(JSON.stringify({ error: { message: 'slow down', padding: 'p'.repeat(10_000) } }));
    });
    const error = await failure(collect(client.stream({ method: 'POST', url, body: '{}' })), 'UPSTREAM_HTTP');
    expect(error.message).toContain('status 429');
    expect(error.message).toContain('slow down');
    expect(error.details).toMatchObject({ status: 429 });
    expect(String(error.details?.body).length).toBeLessThanOrEqual(2048);
  });

  it('says when a quiet stream is open, before its first event, and not for a refused one', async () => {
    let send: (() => void) | undefined;
    const { url } = await serve((req, res) => {
      if (req.url === '/refused') return void res.writeHead(401, { 'Content-Type': 'application/json' }).end('{"error":"unauthorized"}');
      res.writeHead(200, SSE);
      res.write(': quiet\n\n');
      send = () => res.end('data: later\n\n');
    });
    const order: string[] = [];
    const run = collect(client.stream({ method: 'GET', url, onOpen: () => (order.push('open'), send?.()) }));
    expect((await run).map((e) => e.data)).toEqual(['later']);
    expect(order).toEqual(['open']);
    let opened = false;
    await failure(collect(client.stream({ method: 'GET', url: `${url}/refused`, onOpen: () => (opened = true) })), 'UPSTREAM_HTTP');
    expect(opened).toBe(false);
  });

  it('throws UPSTREAM_HTTP when a 200 answer is not an event stream', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, { 'Content-Type': 'application/json' });
      res.end('{"not":"a stream"}');
    });
    const error = await failure(collect(client.stream({ method: 'GET', url })), 'UPSTREAM_HTTP');
    expect(error.message).toContain('application/json instead of text/event-stream');
  });

  it('cancels a stream mid-way when the signal fires', async () => {
    const controller = new AbortController();
    let gone: Promise<unknown> = new Promise(() => undefined);
    const { url } = await serve((_req, res) => {
      gone = closed(res);
      res.writeHead(200, SSE);
      res.write('data: first\n\n');
    });
    const run = async () => {
      for await (const batch of client.stream({ method: 'GET', url, signal: controller.signal })) {
        expect(batch.map((e) => e.data)).toEqual(['first']);
        controller.abort();
      }
    };
    await failure(run(), 'TOOL_CANCELLED');
    await gone;
  });

  it("keeps the connection for the next request when the consumer stops at the stream's end event and the response ends a moment later", async () => {
    const sockets = new Set<unknown>();
    const { url } = await serve((req, res) => {
      sockets.add(req.socket);
      res.writeHead(200, SSE);
      res.write('data: answer\n\ndata: [DONE]\n\n');
      setTimeout(() => res.end(), 20); // the end of the response a packet behind, as over a network
    });
    for (let i = 0; i < 3; i++) {
      for await (const batch of client.stream({ method: 'GET', url })) {
        if (batch.some((e) => e.data === '[DONE]')) break;
      }
      await new Promise((resolve) => setTimeout(resolve, 100)); // the next request comes once the response has ended
    }
    expect(sockets.size).toBe(1);
  });

  it('closes the connection when the consumer stops reading early and the response goes on', async () => {
    let gone: Promise<unknown> = new Promise(() => undefined);
    const { url } = await serve((_req, res) => {
      gone = closed(res);
      res.writeHead(200, SSE);
      res.write('data: one\n\ndata: two\n\n');
    });
    for await (const batch of client.stream({ method: 'GET', url })) {
      expect(batch.map((e) => e.data)).toEqual(['one', 'two']);
      break;
    }
    await gone;
  });

  it('caps the whole stream when maxResponseBytes is given', async () => {
    const { url } = await serve((_req, res) => {
      res.writeHead(200, SSE);
      writeForever(res, Buffer.from(`data: ${'e'.repeat(1000)}\n\n`));
    });
    const error = await failure(collect(client.stream({ method: 'GET', url, maxResponseBytes: 32 * 1024 })), 'OUTPUT_TOO_LARGE');
    expect(error.message).toContain('stream passed 32768 bytes');
  });
});
