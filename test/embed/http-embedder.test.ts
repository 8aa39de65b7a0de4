import { once } from 'node:events';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { createEmbedder } from '../../src/embed/create-embedder.js';
import { createHttpEmbedder } from '../../src/embed/http-embedder.js';
import { dot, normalize } from '../../src/embed/vector-math.js';
import { createHttpClient } from '../../src/primitives/http-client.js';
import { bagOfWords, startEmbeddingsServer, type EmbeddingsServer } from '../fixtures/embed/embeddings-server.js';
import { failure } from '../helpers/expect-failure.js';


let server: EmbeddingsServer;
const closers: (() => Promise<void>)[] = [];

beforeEach(async () => {
  server = await startEmbeddingsServer({ dimensions: 16, shuffle: true });
});

afterEach(async () => {
  for (const close of closers.splice(0).reverse()) await close();
  await server.close();
});

async function make(options: Partial<Parameters<typeof createHttpEmbedder>[0]> = {}) {
  const embedder = await createHttpEmbedder({ url: server.url, model: 'bow-16', ...options });
  closers.push(() => embedder.close());
  return embedder;
}

function answer(status: number, body: string, type = 'application/json') {
  server.override = (_req, res) => {
    res.writeHead(status, { 'content-type': type }).end(body);
    return true;
  };
}

describe('HTTP embedder', () => {
  it('learns the dimensions with one probe, sends OpenAI requests, and returns unit vectors in input order', async () => {
    const embedder = await make({ apiKey: 'sk-test' });
    expect(embedder.dimensions).toBe(16);
    expect(embedder.id).toBe('http:bow-16:16');
    expect(server.seen).toHaveLength(1);
    const texts = ['send a message to the ops channel', 'send a message to the team', 'compute the factorial of 12'];
    const vectors = await embedder.embed(texts);
    const last = server.seen.at(-1)!;
    expect(last.path).toBe('/v1/embeddings');
    expect(last.body).toEqual({ model: 'bow-16', input: texts });
    expect(last.headers.authorization).toBe('Bearer sk-test');
    // The server answered in reverse order; the embedder sorts by index.
    vectors.forEach((v, i) => {
      expect(dot(v, v)).toBeCloseTo(1, 5);
      Array.from(normalize(bagOfWords(texts[i]!, 16))!).forEach((x, k) => expect(v[k]).toBeCloseTo(x, 6));
    });
    expect(dot(vectors[0]!, vectors[1]!)).toBeGreaterThan(dot(vectors[0]!, vectors[2]!));
  });

  it('splits large requests into batches and keeps the order', async () => {
    const embedder = await make({ dimensions: 16, batchSize: 3 });
    expect(server.seen).toHaveLength(0); // no probe when dimensions are given
    const texts = Array.from({ length: 7 }, (_, i) => `text number ${i} word${i}`);
    const vectors = await embedder.embed(texts);
    expect(server.seen.map((s) => s.body.input)).toEqual([texts.slice(0, 3), texts.slice(3, 6), texts.slice(6)]);
    vectors.forEach((v, i) => Array.from(normalize(bagOfWords(texts[i]!, 16))!).forEach((x, k) => expect(v[k]).toBeCloseTo(x, 6)));
  });

  it('posts to /v1/embeddings under a base URL, /embeddings under a /v1 base, and to an exact /embeddings URL', async () => {
    await make({ url: `${server.url}/`, dimensions: 16 }).then((e) => e.embed(['a']));
    await make({ url: `${server.url}/proxy/v1`, dimensions: 16 }).then((e) => e.embed(['b']));
    await make({ url: `${server.url}/custom/embeddings`, dimensions: 16 }).then((e) => e.embed(['c']));
    expect(server.seen.map((s) => s.path)).toEqual(['/v1/embeddings', '/proxy/v1/embeddings', '/custom/embeddings']);
  });

  it('maps an error status to UPSTREAM_HTTP with the status, a body excerpt and a hint', async () => {
    const embedder = await make({ dimensions: 16 });
    answer(401, JSON.stringify({ error: { message: 'Incorrect API key provided' } }));
    const error = await failure(embedder.embed(['x']), 'UPSTREAM_HTTP');
    expect(error.message).toMatch(/answered 401: .*Incorrect API key provided.*check the API key/);
    expect(error.details).toMatchObject({ status: 401, model: 'bow-16' });
    answer(500, 'x'.repeat(5000), 'text/plain');
    const long = await failure(embedder.embed(['x']), 'UPSTREAM_HTTP');
    expect(long.message.length).toBeLessThan(1000);
  });

  it('refuses responses that are not valid embeddings', async () => {
    const embedder = await make({ dimensions: 16 });
    const cases: [string, RegExp][] = [
      ['<html>oops</html>', /not JSON/],
      [JSON.stringify({ result: [] }), /not an OpenAI embeddings response \(data: /],
      [JSON.stringify({ data: [{ index: 0, embedding: ['a'] }] }), /not an OpenAI embeddings response/],
      [JSON.stringify({ data: [] }), /returned 0 embeddings for 1 inputs/],
      [JSON.stringify({ data: [{ index: 3, embedding: bagOfWords('x', 16) }] }), /out-of-range or repeated index 3/],
      [JSON.stringify({ data: [{ index: 0, embedding: [1, 2, 3] }] }), /3-d vector where 16 dimensions were expected/],
      [JSON.stringify({ data: [{ index: 0, embedding: new Array(16).fill(0) }] }), /all-zero/],
    ];
    for (const [body, message] of cases) {
      answer(200, body);
      const error = await failure(embedder.embed(['x']), 'UPSTREAM_HTTP');
      expect(error.message).toMatch(message);
    }
  });

  it('caps the response size', async () => {
    const embedder = await make({ dimensions: 16, maxResponseBytes: 2048 });
    answer(200, JSON.stringify({ data: [{ index: 0, embedding: new Array(2000).fill(0.5) }] }));
    await failure(embedder.embed(['x']), 'OUTPUT_TOO_LARGE');
  });

  it('times out a server that does not answer, and cancels a running request on abort', async () => {
    const closedByClient: Promise<unknown>[] = [];
    server.override = (_req, res) => {
      closedByClient.push(once(res, 'close'));
      return true; // never answers
    };
    const slow = await make({ dimensions: 16, timeoutMs: 300 });
    await failure(slow.embed(['x']), 'HTTP_TIMEOUT');
    const controller = new AbortController();
    const pending = failure(slow.embed(['y'], controller.signal), 'TOOL_CANCELLED');
    while (server.seen.length < 2) await new Promise((resolve) => setImmediate(resolve));
    controller.abort();
    await pending;
    await Promise.all(closedByClient);
  });

  it('fails at creation when the probe fails, and rejects bad options', async () => {
    const refused = http.createServer();
    refused.listen(0, '127.0.0.1');
    await once(refused, 'listening');
    const port = (refused.address() as AddressInfo).port;
    await new Promise((resolve) => refused.close(resolve));
    const error = await failure(createHttpEmbedder({ url: `http://127.0.0.1:${port}`, model: 'm' }), 'UPSTREAM_HTTP');
    expect(error.message).toMatch(/refused/);
    await failure(createHttpEmbedder({ url: 'not a url', model: 'm' }), 'INVALID_INPUT');
    await failure(createHttpEmbedder({ url: 'ftp://127.0.0.1/', model: 'm' }), 'INVALID_INPUT');
    await failure(createHttpEmbedder({ url: server.url, model: '' }), 'INVALID_INPUT');
    await failure(createHttpEmbedder({ url: server.url, model: 'm', batchSize: 0 }), 'INVALID_INPUT');
  });

  it('leaves a shared HTTP client open on close', async () => {
    const client = createHttpClient();
    closers.push(() => client.close());
    const embedder = await createHttpEmbedder({ url: server.url, model: 'bow-16', http: client });
    await embedder.close();
    await failure(embedder.embed(['x']), 'INTERNAL');
    const res = await client.request({ method: 'POST', url: `${server.url}/v1/embeddings`, body: JSON.stringify({ model: 'm', input: ['z'] }) });
    expect(res.status).toBe(200);
  });
});

describe('createEmbedder', () => {
  it('builds the HTTP embedder from a config', async () => {
    const embedder = await createEmbedder({ kind: 'http', url: server.url, model: 'bow-16', apiKey: 'k' });
    closers.push(() => embedder.close());
    expect(embedder.id).toBe('http:bow-16:16');
    expect(server.seen[0]?.headers.authorization).toBe('Bearer k');
  });

  it('rejects an unknown kind or stray fields with a clear error', async () => {
    const unknown = await failure(createEmbedder({ kind: 'openai' } as never), 'INVALID_INPUT');
    expect(unknown.message).toMatch(/^embedder config: kind: .*use \{ kind: use-lite \}/);
    const stray = await failure(createEmbedder({ kind: 'onnx', modelDir: 'models/x', model_dir: 'models/x' } as never), 'INVALID_INPUT');
    expect(stray.message).toMatch(/model_dir/);
    await failure(createEmbedder({ kind: 'http', url: server.url } as never), 'INVALID_INPUT');
  });
});
