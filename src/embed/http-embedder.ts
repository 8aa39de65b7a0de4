import { z } from 'zod';
import { throwIfAborted } from '../base/abort.js';
import { KiwiError } from '../base/errors.js';
import { createHttpClient, type HttpClient } from '../primitives/http-client.js';
import { createBatchQueue, DEFAULT_MAX_QUEUED_TEXTS } from './batch-queue.js';
import type { Embedder } from './embedder.js';
import { normalize } from './vector-math.js';

/**
 * Any OpenAI-compatible embeddings endpoint (OpenAI, llama.cpp, Ollama, vLLM, TEI, LM Studio…),
 * for users who run an embedding server. Requests go through the http_client primitive, so they
 * get its timeouts, size cap and cancellation.
 */

export interface HttpEmbedderOptions {
  /**
   * The server's base URL (`http://127.0.0.1:8080` → POST …/v1/embeddings; a base that already
   * ends in /v1 gets /embeddings), or the full endpoint when it ends with /embeddings.
   */
  url: string;
  model: string;
  /** Sent as `Authorization: Bearer …`. */
  apiKey?: string;
  /**
   * The vector length the model returns. When given, every response is checked against it and
   * no probe is sent; when left out, one probe request at creation learns it.
   */
  dimensions?: number;
  /** A shared client (closed by its owner); by default the embedder makes and closes its own. */
  http?: HttpClient;
  /** Texts per request; default 64. */
  batchSize?: number;
  /** Limit for the response headers, and for each pause while the body arrives; default 30_000. */
  timeoutMs?: number;
  /** Cap on one response body; default 32 MiB. */
  maxResponseBytes?: number;
  /** Longer texts are cut to this many characters; default 32_768. */
  maxTextChars?: number;
  maxQueuedTexts?: number;
  /** Cancels the probe request at creation. */
  signal?: AbortSignal;
}

const optionsSchema = z.object({
  url: z.string().min(1).max(4096),
  model: z.string().min(1).max(512),
  apiKey: z.string().max(8192).optional(),
  dimensions: z.number().int().min(1).max(65_536).optional(),
  batchSize: z.number().int().min(1).max(4096).optional(),
  timeoutMs: z.number().int().min(1).max(3_600_000).optional(),
  maxResponseBytes: z.number().int().min(1024).optional(),
  maxTextChars: z.number().int().min(1).max(10_000_000).optional(),
  maxQueuedTexts: z.number().int().min(1).max(10_000_000).optional(),
});

// Loose: servers add fields (object, usage, …), and only these are needed.
const responseSchema = z.looseObject({
  data: z.array(z.looseObject({ index: z.number().int().min(0), embedding: z.array(z.number()) })),
});

const EXCERPT_CHARS = 500;

function endpoint(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new KiwiError('INVALID_INPUT', `embedding server URL "${raw.slice(0, 200)}" is not an absolute URL; give e.g. http://127.0.0.1:8080`);
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') throw new KiwiError('INVALID_INPUT', `embedding server URL must be http: or https:, not ${url.protocol}`);
  const base = url.pathname.replace(/\/+$/, '');
  if (!/\/embeddings$/.test(base)) url.pathname = /\/v1$/.test(base) ? `${base}/embeddings` : `${base}/v1/embeddings`;
  return url;
}

function excerpt(body: string): string {
  const flat = body.replace(/\s+/g, ' ').trim();
  if (flat === '') return '(empty body)';
  return flat.length > EXCERPT_CHARS ? `${flat.slice(0, EXCERPT_CHARS)}…` : flat;
}

export async function createHttpEmbedder(options: HttpEmbedderOptions): Promise<Embedder> {
  const parsed = optionsSchema.safeParse(options);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new KiwiError('INVALID_INPUT', `HTTP embedder: ${issue?.path.join('.') || 'options'}: ${issue?.message ?? 'invalid'}`);
  }
  const o = parsed.data;
  const url = endpoint(o.url);
  const where = `${url.origin}${url.pathname}`;
  const http = options.http ?? createHttpClient();
  const ownsClient = options.http === undefined;
  const timeoutMs = o.timeoutMs ?? 30_000;
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json' };
  if (o.apiKey !== undefined && o.apiKey !== '') headers.authorization = `Bearer ${o.apiKey}`;
  let dimensions = o.dimensions;

  const upstream = (problem: string, details: Record<string, unknown> = {}) =>
    new KiwiError('UPSTREAM_HTTP', `embedding server ${where} (model ${o.model}): ${problem}`, { details: { url: where, model: o.model, ...details } });

  async function run(texts: string[], signal: AbortSignal): Promise<Float32Array[]> {
    const res = await http.request({
      method: 'POST',
      url: url.href,
      headers,
      body: JSON.stringify({ model: o.model, input: texts }),
      headersTimeoutMs: timeoutMs,
      bodyTimeoutMs: timeoutMs,
      maxResponseBytes: o.maxResponseBytes ?? 32 * 1024 * 1024,
      maxRedirects: 0,
      signal,
    });
    if (res.status < 200 || res.status > 299) {
      const hint =
        res.status === 401 || res.status === 403
          ? '; check the API key'
          : res.status === 404
            ? '; check the URL (it should serve POST /v1/embeddings) and the model name'
            : res.status === 429
              ? '; the server is rate limiting, try again later or lower batchSize'
              : res.status >= 300 && res.status <= 399
                ? `; redirects are not followed, give the final URL${res.headers.location ? ` (${res.headers.location.slice(0, 200)})` : ''}`
                : '';
      throw upstream(`answered ${res.status}: ${excerpt(res.body)}${hint}`, { status: res.status, body: excerpt(res.body) });
    }
    let json: unknown;
    try {
      json = JSON.parse(res.body);
    } catch {
      throw upstream(`answered ${res.status} with a body that is not JSON: ${excerpt(res.body)}`, { status: res.status });
    }
    const checked = responseSchema.safeParse(json);
    if (!checked.success) {
      const issue = checked.error.issues[0];
      throw upstream(`the response is not an OpenAI embeddings response (${issue?.path.join('.') || 'body'}: ${issue?.message}): ${excerpt(res.body)}`);
    }
    const data = checked.data.data;
    if (data.length !== texts.length) throw upstream(`returned ${data.length} embeddings for ${texts.length} inputs`);
    const out = new Array<Float32Array | undefined>(texts.length);
    const width = dimensions ?? data[0]?.embedding.length ?? 0;
    for (const item of data) {
      if (item.index >= texts.length || out[item.index] !== undefined) throw upstream(`returned an out-of-range or repeated index ${item.index}`);
      if (item.embedding.length !== width) throw upstream(`returned a ${item.embedding.length}-d vector where ${width} dimensions were expected (set dimensions to the model's real size)`);
      const vector = normalize(item.embedding);
      if (vector === null) throw upstream(`returned an empty, all-zero or non-finite vector for input ${item.index}`);
      out[item.index] = vector;
    }
    return out as Float32Array[];
  }

  const name = `the HTTP embedder (${o.model} at ${where})`;
  const queue = createBatchQueue({
    name,
    batchSize: o.batchSize ?? 64,
    maxTextChars: o.maxTextChars ?? 32_768,
    maxQueuedTexts: o.maxQueuedTexts ?? DEFAULT_MAX_QUEUED_TEXTS,
    run,
  });

  if (dimensions === undefined) {
    try {
      throwIfAborted(options.signal, `probing ${name}`);
      const [probe] = await queue.embed(['dimension probe'], options.signal);
      dimensions = (probe as Float32Array).length;
    } catch (error) {
      await queue.close(new KiwiError('TOOL_CANCELLED', `${name} failed to start`));
      if (ownsClient) await http.close();
      throw error;
    }
  }
  const width = dimensions;
  let closing: Promise<void> | undefined;
  return {
    id: `http:${o.model}:${width}`,
    dimensions: width,
    embed: (texts, signal) => queue.embed(texts, signal),
    close() {
      closing ??= (async () => {
        await queue.close(new KiwiError('TOOL_CANCELLED', `${name} was closed before this request finished`));
        if (ownsClient) await http.close();
      })();
      return closing;
    },
  };
}
